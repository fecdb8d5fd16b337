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
  ASSERT_EQ(grads.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    ASSERT_EQ(grads[i].shape(), params[i].shape()) << "gradient " << i;
    std::vector<double> g = grads[i].to_doubles();
    for (int64_t j = 0; j < params[i].size(); ++j) {
      double x0 = params[i].to_doubles()[static_cast<size_t>(j)];
      double h = 1e-6 * std::max(1.0, std::abs(x0));
      auto shifted = [&](double delta) {
        std::vector<Array> p = params;
        p[i] = params[i].clone();
        static_cast<double*>(p[i].mutable_data())[j] = x0 + delta;
        return plain(p, x).item();
      };
      double fd = (shifted(h) - shifted(-h)) / (2 * h);
      EXPECT_NEAR(g[static_cast<size_t>(j)], fd, kGradRel * std::abs(fd) + kGradAbs * std::max(1.0, std::abs(f0)))
          << "d/d parameter " << i << " element " << j;
    }
  }
}

}  // namespace fluxion::testing
