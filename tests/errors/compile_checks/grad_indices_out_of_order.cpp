// grad<I...> with indices not in increasing order.
// expect: list the argument indices in increasing order, each once
#include <fluxion/fluxion.h>

namespace fx = fluxion;

int main() {
  auto loss = [](const fx::Tensor& w, const fx::Tensor& x) { return fx::sum(w * x); };
  auto g = fx::jit(fx::grad<1, 0>(loss));
  fx::Array w = fx::Array::scalar(1.0f);
  g(w, w);
}
