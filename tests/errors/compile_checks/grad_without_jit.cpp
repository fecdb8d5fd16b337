// grad's function called on an Array, outside any trace.
// expect: jit the result, fluxion::jit(fluxion::grad(f))(arrays...)
#include <fluxion/fluxion.h>

namespace fx = fluxion;

int main() {
  auto loss = [](const fx::Tensor& w) { return fx::sum(w * w); };
  fx::Array w = fx::Array::scalar(1.0f);
  fx::grad(loss)(w);
}
