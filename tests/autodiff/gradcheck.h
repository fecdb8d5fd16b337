// Gradient checking against central finite differences (common/finite_differences.h) in double
// precision, and the op families and shapes the rule tests share.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "common/finite_differences.h"
#include "common/test_util.h"

namespace fluxion::testing {

// Checks `grads`, the gradients of a scalar function at `at` (where its value is f0), against
// central differences of `eval` (the function on the interpreter, taking all of `at`); `what`
// names an argument in the failure messages.
template <class Eval>
void expect_gradients_near_fd(const std::vector<Array>& grads, const std::vector<Array>& at, double f0, Eval eval,
                              const char* what) {
  ASSERT_EQ(grads.size(), at.size());
  std::vector<std::vector<double>> fd = central_differences(at, eval);
  for (size_t i = 0; i < at.size(); ++i) {
    ASSERT_EQ(grads[i].shape(), at[i].shape()) << "gradient " << i;
    std::vector<double> g = grads[i].to_doubles();
    for (size_t j = 0; j < g.size(); ++j) {
      EXPECT_NEAR(g[j], fd[i][j], gradient_tolerance(fd[i][j], f0)) << "d/d " << what << " " << i << " element " << j;
    }
  }
}

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
  auto eval = [&](const std::vector<Array>& v) {
    return [&]<size_t... k>(std::index_sequence<k...>) { return plain(v[k]...).item(); }
    (std::index_sequence_for<A...>{});
  };
  expect_gradients_near_fd(grads, xs, f0, eval, "input");
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
