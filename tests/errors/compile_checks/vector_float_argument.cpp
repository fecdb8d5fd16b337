// A std::vector<float> given where an Array is expected.
// expect: a std::vector<float> or a number is not an Array
#include <vector>

#include <fluxion/fluxion.h>

namespace fx = fluxion;

int main() {
  auto f = fx::jit([](const fx::Tensor& a) { return a * 2.0; });
  std::vector<float> values{1, 2, 3};
  f(values);
}
