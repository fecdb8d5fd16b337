// Helpers of the nn tests: parameters in f64, and gradients with respect to a parameter list
// checked against central finite differences computed by the interpreter.
#pragma once

#include <fluxion/nn.h>

#include "autodiff/gradcheck.h"

namespace fluxion::testing {

inline Array to_f64(const Array& a) { return make(DType::f64, a.to_doubles(), a.shape()); }

inline std::vector<Array> to_f64(const std::vector<Array>& v) {
  std::vector<Array> out;
  for (const Array& a : v) out.push_back(to_f64(a));
  return out;
}

// f(params, x) -> scalar. The gradient with respect to every parameter, computed on `backend`,
// must match central differences of f on the interpreter (params and x are f64).
template <class F>
void expect_param_gradients(Backend backend, F f, const std::vector<Array>& params, const Array& x) {
  auto [value, grads] = jit(value_and_grad(f, {0}), backend)(params, x);
  auto plain = jit(f, Backend::Interp);
  double f0 = plain(params, x).item();
  EXPECT_NEAR(value.item(), f0, 1e-10 * std::max(1.0, std::abs(f0))) << "value";
  expect_gradients_near_fd(
      grads, params, f0, [&](const std::vector<Array>& p) { return plain(p, x).item(); }, "parameter");
}

}  // namespace fluxion::testing
