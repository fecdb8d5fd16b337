// Gradient checking against central finite differences in double precision.
#pragma once

#include <string>
#include <vector>

#include "common/test_util.h"

namespace fluxion::testing {

// Finite differences: step h = 1e-6 * max(1, |x|); the central difference's truncation error is
// O(h^2 f''') ~ 1e-12 and its rounding error ~ 1e-16 |f| / h ~ 1e-10 |f|, so an analytic
// gradient matches within kGradRel * |g| + kGradAbs * max(1, |f|).
inline constexpr double kGradRel = 1e-6;
inline constexpr double kGradAbs = 1e-6;

// Checks jit(value_and_grad(f, all arguments)) on `backend` against finite differences of
// jit(f) (always on the interpreter, in f64) at `inputs` (all f64). Every input is a wrt
// argument.
template <class F, class... A>
void expect_gradients_match(Backend backend, F f, const A&... inputs) {
  std::vector<Array> xs{inputs...};
  std::vector<int> wrt;
  for (size_t i = 0; i < xs.size(); ++i) wrt.push_back(static_cast<int>(i));
  auto [value, grads] = jit(value_and_grad(f, wrt), backend)(inputs...);
  auto plain = jit(f, Backend::Interp);
  double f0 = plain(inputs...).item();
  EXPECT_NEAR(value.item(), f0, 1e-12 * std::max(1.0, std::abs(f0))) << "value";
  ASSERT_EQ(grads.size(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_EQ(grads[i].shape(), xs[i].shape()) << "gradient " << i;
    std::vector<double> g = grads[i].to_doubles();
    for (int64_t j = 0; j < xs[i].size(); ++j) {
      double* p = static_cast<double*>(xs[i].mutable_data()) + j;
      double x0 = *p;
      double h = 1e-6 * std::max(1.0, std::abs(x0));
      std::vector<Array> plus = xs, minus = xs;
      plus[i] = xs[i].clone();
      minus[i] = xs[i].clone();
      static_cast<double*>(plus[i].mutable_data())[j] = x0 + h;
      static_cast<double*>(minus[i].mutable_data())[j] = x0 - h;
      auto eval = [&](const std::vector<Array>& v) {
        return std::apply([&](const auto&... a) { return plain(a...).item(); },
                          [&]<size_t... k>(std::index_sequence<k...>) { return std::make_tuple(v[k]...); }(
                              std::index_sequence_for<A...>{}));
      };
      double fd = (eval(plus) - eval(minus)) / (2 * h);
      EXPECT_NEAR(g[static_cast<size_t>(j)], fd, kGradRel * std::abs(fd) + kGradAbs * std::max(1.0, std::abs(f0)))
          << "d/d input " << i << " element " << j;
    }
  }
}

// f64 inputs with values uniform in [lo, hi).
inline Array uniform64(const Shape& shape, double lo, double hi, uint32_t seed) {
  return make(DType::f64, random_doubles(numel(shape), lo, hi, seed), shape);
}

}  // namespace fluxion::testing
