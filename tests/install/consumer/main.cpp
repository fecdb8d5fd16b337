// Exits 0 only when the installed library computes sum((2x)^2) correctly.
#include <cstdio>

#include <fluxion/fluxion.h>

int main() {
  namespace fx = fluxion;
  auto f = fx::jit([](fx::Tensor x) { return fx::sum(fx::square(x * 2.0)); });
  double got = f(fx::Array(std::vector<float>{1, 2, 3}, {3})).item();
  std::printf("consumer: %g\n", got);
  return got == 56.0 ? 0 : 1;
}
