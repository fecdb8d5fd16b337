// Central finite differences, the reference every derivative test (gradient checks, the op
// table, the differential fuzzer) holds reverse and forward mode to, and how close a derivative
// must come to them. Free of gtest: the differential fuzzer's command line uses it too.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <vector>

#include <fluxion/fluxion.h>

namespace fluxion::testing {

// Step h = 1e-6 * max(1, |x|): the central difference's truncation error is O(h^2 f''') ~ 1e-12
// and its rounding error ~ 1e-16 |f| / h ~ 1e-10 |f|, so an analytic derivative g matches it
// within kGradRel * |g| + kGradAbs * max(1, |f|).
inline constexpr double kGradRel = 1e-6;
inline constexpr double kGradAbs = 1e-6;

inline double fd_step(double x) { return 1e-6 * std::max(1.0, std::abs(x)); }

// The largest accepted |derivative - fd| for a function whose value is `value`; `rel` is looser
// than kGradRel only where a caller says why.
inline double gradient_abs_tolerance(double value) { return kGradAbs * std::max(1.0, std::abs(value)); }
inline double gradient_tolerance(double fd, double value, double rel = kGradRel) {
  return rel * std::abs(fd) + gradient_abs_tolerance(value);
}

// `v` as an element of the float dtype `t` holds it.
inline double stored_as(DType t, double v) { return t == DType::f32 ? static_cast<double>(static_cast<float>(v)) : v; }

// `inputs` with element j of input i replaced by `v` (a float input).
inline std::vector<Array> with_element(const std::vector<Array>& inputs, size_t i, size_t j, double v) {
  std::vector<Array> moved = inputs;
  std::vector<double> x = inputs[i].to_doubles();
  x[j] = v;
  moved[i] = inputs[i].dtype() == DType::f32 ? Array(std::vector<float>(x.begin(), x.end()), inputs[i].shape())
                                             : Array(x, inputs[i].shape());
  return moved;
}

// (plus - minus) / step, elementwise through nested vectors of results.
inline double difference(double plus, double minus, double step) { return (plus - minus) / step; }
template <class T>
std::vector<T> difference(const std::vector<T>& plus, const std::vector<T>& minus, double step) {
  std::vector<T> d;
  for (size_t r = 0; r < plus.size(); ++r) d.push_back(difference(plus[r], minus[r], step));
  return d;
}

// Central differences of `f` (std::vector<Array> -> a double or nested std::vector<double>) with
// respect to every element of every float input: result[i][j] = d f / d element j of input i,
// empty for an input that is not float. The quotient's denominator is the distance between the
// two points as stored, so that an f32 input is stepped by exactly what it can hold.
template <class F, class R = std::invoke_result_t<F&, const std::vector<Array>&>>
std::vector<std::vector<R>> central_differences(const std::vector<Array>& inputs, F f) {
  std::vector<std::vector<R>> d(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    DType t = inputs[i].dtype();
    if (!is_float(t)) continue;
    std::vector<double> x = inputs[i].to_doubles();
    for (size_t j = 0; j < x.size(); ++j) {
      double h = fd_step(x[j]);
      double hi = stored_as(t, x[j] + h), lo = stored_as(t, x[j] - h);
      d[i].push_back(difference(f(with_element(inputs, i, j, hi)), f(with_element(inputs, i, j, lo)), hi - lo));
    }
  }
  return d;
}

}  // namespace fluxion::testing
