// The correct use of each API the other programs here misuse: it must compile, so that their
// failures come from the misuse and not from the set-up.
// expect: compiles
#include <vector>

#include <fluxion/fluxion.h>

namespace fx = fluxion;

int main() {
  auto add = fx::jit([](const fx::Tensor& a, const fx::Tensor& b) { return a + b; });
  auto loss = [](const fx::Tensor& w) { return fx::sum(w * w); };
  auto first = fx::jit([](const std::vector<fx::Tensor>& p) { return p[0] * 2.0; });
  fx::Array x = fx::Array::scalar(1.0f);
  add(x, x);
  fx::jit(fx::grad(loss))(x);
  fx::jit(fx::grad<0>(loss))(x);
  first(std::vector<fx::Array>{x});
}
