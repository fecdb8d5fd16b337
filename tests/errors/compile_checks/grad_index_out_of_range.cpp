// grad<I> with an index past the function's arguments.
// expect: an argument index is not that of an argument the function is called with
#include <fluxion/fluxion.h>

namespace fx = fluxion;

int main() {
  auto loss = [](const fx::Tensor& w, const fx::Tensor& x) { return fx::sum(w * x); };
  auto g = fx::jit(fx::grad<2>(loss));
  fx::Array w = fx::Array::scalar(1.0f);
  g(w, w);
}
