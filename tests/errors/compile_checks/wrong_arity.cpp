// A jitted function of two arguments called with one.
// expect: called with another number of arguments than it takes
#include <fluxion/fluxion.h>

namespace fx = fluxion;

int main() {
  auto f = fx::jit([](const fx::Tensor& a, const fx::Tensor& b) { return a + b; });
  fx::Array x = fx::Array::scalar(1.0f);
  f(x);
}
