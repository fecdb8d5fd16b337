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

// The differentiable elementwise ops with input domains that avoid kinks (abs, relu at 0) and
// poles (log, sqrt, rsqrt at 0): shared by the reverse and forward rule tests.
struct UnaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, Loc);
  double lo, hi;
};
inline std::vector<UnaryCase> unary_cases() {
  return {{"neg", neg, -2, 2},          {"abs", abs, 0.1, 2},         {"square", square, -2, 2},
          {"relu", relu, 0.1, 2},       {"exp", exp, -2, 2},          {"expm1", expm1, -2, 2},
          {"log", log, 0.5, 3},         {"log1p", log1p, -0.5, 3},    {"sqrt", sqrt, 0.5, 3},
          {"rsqrt", rsqrt, 0.5, 3},     {"sin", sin, -3, 3},          {"cos", cos, -3, 3},
          {"tanh", tanh, -2, 2},        {"sigmoid", sigmoid, -4, 4},  {"softplus", softplus, -4, 4},
          {"erf", erf, -2, 2}};
}

struct BinaryCase {
  const char* name;
  Tensor (*op)(const Tensor&, const Tensor&, Loc);
  double lo, hi;
};
inline std::vector<BinaryCase> binary_cases() {
  return {{"add", add, -2, 2},   {"sub", sub, -2, 2},         {"mul", mul, -2, 2},         {"div", div, 0.5, 2},
          {"pow", pow, 0.5, 2},  {"atan2", atan2, 0.2, 2},    {"maximum", maximum, -2, 2}, {"minimum", minimum, -2, 2}};
}

// Operand shapes with broadcasting edge cases: size-1 dims both ways, a scalar, a lower rank.
inline std::vector<std::pair<Shape, Shape>> broadcast_pairs() { return {{{3, 1}, {1, 4}}, {{}, {2, 3}}, {{2, 3}, {3}}, {{4}, {4}}}; }

}  // namespace fluxion::testing
