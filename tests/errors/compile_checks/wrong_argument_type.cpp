// A function of a vector of Tensors called with one Array.
// expect: the function cannot take these arguments as Tensors
#include <vector>

#include <fluxion/fluxion.h>

namespace fx = fluxion;

int main() {
  auto f = fx::jit([](const std::vector<fx::Tensor>& p) { return p[0] * 2.0; });
  fx::Array x = fx::Array::scalar(1.0f);
  f(x);
}
