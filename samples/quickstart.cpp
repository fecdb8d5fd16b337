// The README's quick start, kept compiling: README.md shows this file's code.
#include <cstdio>
#include <fluxion/fluxion.h>
namespace fx = fluxion;

int main() try {
  // A small network's forward pass; b broadcasts over the batch dimension.
  auto f = [](fx::Tensor W, fx::Tensor b, fx::Tensor x) {
    fx::Tensor h = fx::tanh(fx::matmul(W, x) + b);
    return std::make_tuple(h, fx::sum(h * h));
  };
  auto step = fx::jit(f);  // the default backend; or fx::jit(f, fx::Backend::Interp)

  fx::Array W(std::vector<float>{0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f}, {3, 2});
  fx::Array b(std::vector<float>{0.0f, 0.1f, -0.1f}, {3, 1});
  fx::Array x(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});

  auto [h, loss] = step(W, b, x);          // traced and compiled on the first call
  std::printf("%s\nloss = %g\n", h.str().c_str(), loss.item());
  std::printf("%s", step.lower(W, b, x).ir().c_str());  // the graph IR that ran
} catch (const std::exception& e) {
  // An fx::Error says what went wrong: the op, the shapes and dtypes, and the caller's line.
  std::fprintf(stderr, "quickstart: error: %s\n", e.what());
  return 1;
}
