// The demo: trace a small function, print its IR, run it on the default backend, print the
// result. `make demo` runs this until the training samples exist.
#include <cstdio>

#include <fluxion/fluxion.h>

namespace fx = fluxion;

int main() {
  try {
    // A two-layer network's forward pass and a loop that damps a state 8 times.
    auto f = [](fx::Tensor W, fx::Tensor b, fx::Tensor x) {
      fx::Tensor h = fx::tanh(fx::matmul(W, x) + b);  // b [3, 1] broadcasts over the batch
      fx::Tensor s = fx::fori_loop(0, 8, [](fx::Tensor, fx::Tensor s) { return s * 0.5 + 1.0; }, fx::sum(h * h));
      return std::make_tuple(h, s);
    };
    auto step = fx::jit(f);
    fx::Array W(std::vector<float>{0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f}, {3, 2});
    fx::Array b(std::vector<float>{0.0f, 0.1f, -0.1f}, {3, 1});
    fx::Array x(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 4});

    std::printf("Graph IR of f (backend %s):\n%s\n", fx::backend_name(step.backend()),
                step.lower(W, b, x).ir().c_str());
    auto [h, s] = step(W, b, x);
    std::printf("h = %s\ns = %s\n", h.str().c_str(), s.str().c_str());
    return 0;
  } catch (const fx::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
