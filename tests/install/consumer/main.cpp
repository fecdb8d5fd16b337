// The full library: computes sum((2x)^2) and exports the program for the runtime-only consumer.
// Usage: consumer ARTIFACT. Exits 0 only when the installed library computes it correctly.
#include <cstdio>

#include <fluxion/fluxion.h>

int main(int argc, char** argv) {
  namespace fx = fluxion;
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer ARTIFACT\n");
    return 2;
  }
  auto f = fx::jit([](fx::Tensor x) { return fx::sum(fx::square(x * 2.0)); });
  fx::Array x(std::vector<float>{1, 2, 3}, {3});
  double got = f(x).item();
  std::printf("consumer: %g\n", got);
  f.lower(x).save(argv[1], {.input_names = {"x"}, .output_names = {"sum"}});
  return got == 56.0 ? 0 : 1;
}
