#include <cstdio>
#include <vector>

#include <fluxion/fluxion.h>

namespace fx = fluxion;

int main() {
  // A function of Tensors: each op records a node of the graph IR.
  auto f = [](const fx::Tensor& x, const fx::Tensor& y) { return fx::sum(fx::tanh(x) * y); };
  auto jf = fx::jit(f);  // the default backend (CPU)

  fx::Array x(std::vector<float>{0.5f, -1.0f, 2.0f}, {3});
  fx::Array y(std::vector<float>{1.0f, 2.0f, 3.0f}, {3});
  fx::Array out = jf(x, y);  // first call: trace, simplify, compile, run
  out = jf(x, y);            // same shapes and dtypes: runs the compiled program
  std::printf("%g\n", out.item());

  std::printf("%s", jf.lower(x, y).ir().c_str());         // the graph IR that runs
  std::printf("%s\n", jf.lower(x, y).kernels().c_str());  // the kernels it was fused into

  fx::Array x4(std::vector<float>{1, 2, 3, 4}, {4});
  fx::Array y4(std::vector<float>{1, 1, 1, 1}, {4});
  jf(x4, y4);                                        // a new shape: traced and compiled again
  std::printf("%zu signatures\n", jf.cache_size());  // 2

  try {
    jf(x, y4);  // [3] and [4] do not broadcast
  } catch (const fx::Error& e) {
    std::printf("%s\n", e.what());
  }
}
