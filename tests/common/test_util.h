// Shared by the test folders: parameterisation over every backend present,
// conversion of reference data to Arrays, deterministic pseudo-random inputs, small reference
// helpers (broadcasting, row-major indexing) and comparison with a documented tolerance.
//
// Expected values are always computed by the test itself, in double precision, from the inputs
// *as stored* (an f32 input is first rounded to float, see `round_to`), never by Fluxion.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fluxion/fluxion.h>

namespace fluxion::testing {

// A path in the temporary directory that no other test process uses: the suite's tests run side
// by side under ctest -j, some under the same name (once per backend, once per Vulkan profile).
inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("fluxion_test_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- Parameterisation over backends.

class BackendTest : public ::testing::TestWithParam<Backend> {
 protected:
  Backend backend() const { return GetParam(); }
  // jit(f) on this test's backend.
  template <class F>
  auto jit(F f) const {
    return fluxion::jit(std::move(f), backend());
  }
};

// Runs `f` once through jit on `backend` (traced for these arguments' signature).
template <class F, class... Args>
auto run(Backend backend, F f, const Args&... args) {
  return fluxion::jit(std::move(f), backend)(args...);
}

// Whether `backend` runs f64 programs: a Vulkan device without shaderFloat64 refuses them with
// an Error (docs/vulkan.md, "Capabilities"). There, tests of f64 results skip
// (FLUXION_REQUIRE_F64) and dtype loops leave f64 out (dtypes_on), so the rest of the suite
// still runs on such a device.
inline bool runs_f64(Backend backend) { return backend != Backend::Vulkan || vulkan_device().capabilities.float64; }

// `dtypes` without f64 where `backend` cannot run it.
inline std::vector<DType> dtypes_on(Backend backend, std::initializer_list<DType> dtypes) {
  std::vector<DType> out;
  for (DType t : dtypes) {
    if (t != DType::f64 || runs_f64(backend)) out.push_back(t);
  }
  return out;
}

inline std::string backend_param_name(const ::testing::TestParamInfo<Backend>& info) {
  return backend_name(info.param);
}

// ---- Tolerances.
//
// `Tol` describes how a result was produced; `allowed` turns it into the largest accepted
// |got - want| for one element:
//
//   f32  1e-5 * |want| + 1e-6      one op (or a short chain) rounded to f32 after each op is
//                                  within a few ulps (ulp = 2^-23 ~ 1.2e-7 relative) of the exact
//                                  value; 1e-6 absolute covers results that are ~0.
//   f32 transcendental: 1e-5 * |want| + 1e-5
//                                  exp/log/sin/tanh/erf/pow/... on a device are polynomial
//                                  approximations accurate to a few ulps *of their argument's
//                                  scale*, not of the result: sin(x) near a multiple of pi,
//                                  log(x) near 1, expm1/log1p/erf near 0, atan2 near 0 give tiny
//                                  results whose absolute error is that of the argument
//                                  (~1e-7 * |x|, times a few ulps), so a purely relative bound
//                                  would fail correct implementations.
//   f64  1e-12 * |want| + 1e-12    the same reasoning in double (ulp ~ 2.2e-16).
//   f16, bf16  2u * |want| + tiny  a result computed in f32 and rounded to the format (u = 2^-11
//                                  for f16, 2^-8 for bf16): within one ulp; transcendental
//                                  functions add 2u absolute, for the argument-scale reason above.
//   i32, bool                      exact.
//
// Accumulations (sum, mean, matmul, conv, avg_pool) add `terms * u * magnitude` to the absolute
// bound (u = 2^-24 for f32, 2^-53 for f64): the first-order worst-case error of a recursive sum
// of `terms` terms each at most `magnitude` in size, whatever order a backend adds them in.
// NaN must match NaN and infinities must match exactly (same sign).
//
// `Tol::loose(a)` adds `a` to the absolute bound of floats, for the rare result that a
// backend may legitimately compute in lower precision; each use says why.
struct Tol {
  bool transcendental = false;
  int64_t terms = 1;
  double magnitude = 1;
  double extra_abs = 0;

  static Tol arith() { return {}; }
  static Tol trans() { return {true, 1, 1, 0}; }
  static Tol sum(int64_t terms, double magnitude = 1) { return {false, terms, magnitude, 0}; }
  static Tol loose(double extra_abs) { return {true, 1, 1, extra_abs}; }
};

inline double allowed(DType t, double want, Tol tol = {}) {
  double acc = tol.terms > 1 ? static_cast<double>(tol.terms) * tol.magnitude : 0;
  switch (t) {
    case DType::f32: return 1e-5 * std::abs(want) + (tol.transcendental ? 1e-5 : 1e-6) + acc * 0x1p-24 + tol.extra_abs;
    case DType::f64: return 1e-12 * std::abs(want) + 1e-12 + acc * 0x1p-53 + tol.extra_abs;
    case DType::f16:
    case DType::bf16: {
      double u = t == DType::f16 ? 0x1p-11 : 0x1p-8;
      return 2 * u * std::abs(want) + (tol.transcendental ? 2 * u : 0x1p-24) + acc * 0x1p-24 + tol.extra_abs;
    }
    default: return 0;
  }
}

// ---- Values as stored.

// `v` as an element of dtype `t` holds it: f32, f16 and bf16 round to nearest even, i32
// truncates toward zero (callers pass integral values), bool is v != 0.
inline double round_to(DType t, double v) {
  switch (t) {
    case DType::f32: return static_cast<double>(static_cast<float>(v));
    case DType::f64: return v;
    case DType::i32: return static_cast<double>(static_cast<int32_t>(v));
    case DType::boolean: return v != 0 ? 1.0 : 0.0;
    case DType::f16: return fluxion::f16_value(fluxion::f16_bits(v));
    case DType::bf16: return fluxion::bf16_value(fluxion::bf16_bits(v));
  }
  return v;
}

inline std::vector<double> round_all(DType t, std::vector<double> v) {
  for (double& x : v) x = round_to(t, x);
  return v;
}

// An Array of dtype `t` and shape `shape` holding `values` (converted with round_to).
inline Array make(DType t, const std::vector<double>& values, Shape shape) {
  switch (t) {
    case DType::f32: {
      std::vector<float> v(values.begin(), values.end());
      return Array(v, std::move(shape));
    }
    case DType::f64: return Array(values, std::move(shape));
    case DType::i32: {
      std::vector<int32_t> v;
      for (double x : values) v.push_back(static_cast<int32_t>(x));
      return Array(v, std::move(shape));
    }
    case DType::boolean: {
      std::vector<bool> v;
      for (double x : values) v.push_back(x != 0);
      return Array(v, std::move(shape));
    }
    case DType::f16: {
      std::vector<fluxion::Half> v;
      for (double x : values) v.emplace_back(x);
      return Array(v, std::move(shape));
    }
    case DType::bf16: {
      std::vector<fluxion::BFloat16> v;
      for (double x : values) v.emplace_back(x);
      return Array(v, std::move(shape));
    }
  }
  return Array();
}

// ---- Deterministic pseudo-random inputs (seeded std::mt19937; the draws are made with our own
// arithmetic, not std::*_distribution, so they are the same with every standard library).

inline std::vector<double> random_doubles(int64_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = lo + (hi - lo) * (static_cast<double>(gen()) / 4294967296.0);
  return v;
}

// Integers uniformly in [lo, hi] (inclusive), as doubles.
inline std::vector<double> random_ints(int64_t n, int64_t lo, int64_t hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t span = static_cast<uint64_t>(hi - lo + 1);
  for (double& x : v) x = static_cast<double>(lo + static_cast<int64_t>(gen() % span));
  return v;
}

// Random values already rounded to `t` (floats in [lo, hi), ints in [lo, hi], bools 0/1).
inline std::vector<double> random_values(DType t, int64_t n, double lo, double hi, uint32_t seed) {
  switch (t) {
    case DType::f32:
    case DType::f64:
    case DType::f16:
    case DType::bf16: return round_all(t, random_doubles(n, lo, hi, seed));
    case DType::i32: return random_ints(n, static_cast<int64_t>(lo), static_cast<int64_t>(hi), seed);
    case DType::boolean: return random_ints(n, 0, 1, seed);
  }
  return {};
}

// ---- Reference helpers.

inline int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Row-major multi-index of flat index `i` in shape `s`.
inline std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = i % s[d];
    i /= s[d];
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

// NumPy broadcast of two shapes (the test author only passes compatible ones).
inline Shape broadcast_shape(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// `v` (row-major, shape `from`) materialised at shape `to` by NumPy broadcasting.
inline std::vector<double> broadcast_values(const std::vector<double>& v, const Shape& from, const Shape& to) {
  std::vector<double> out(static_cast<size_t>(count(to)));
  size_t off = to.size() - from.size();
  for (int64_t i = 0; i < count(to); ++i) {
    std::vector<int64_t> idx = unravel(i, to);
    std::vector<int64_t> src(from.size());
    for (size_t d = 0; d < from.size(); ++d) src[d] = from[d] == 1 ? 0 : idx[d + off];
    out[static_cast<size_t>(i)] = v[static_cast<size_t>(ravel(src, from))];
  }
  return out;
}

// ---- Comparison.

inline std::string str(const Shape& s) { return shape_str(s); }

// Checks dtype, shape and every element of `got` against `want` within allowed(dtype, want, tol).
// Reports up to 8 bad elements with their flat index.
inline ::testing::AssertionResult matches(const Array& got, DType dtype, const Shape& shape,
                                          const std::vector<double>& want, Tol tol = {}) {
  if (got.dtype() != dtype) {
    return ::testing::AssertionFailure() << "dtype " << dtype_name(got.dtype()) << ", expected " << dtype_name(dtype);
  }
  if (got.shape() != shape) {
    return ::testing::AssertionFailure() << "shape " << shape_str(got.shape()) << ", expected " << shape_str(shape);
  }
  if (static_cast<int64_t>(want.size()) != count(shape)) {
    return ::testing::AssertionFailure() << "test bug: " << want.size() << " expected values for shape "
                                         << shape_str(shape);
  }
  std::vector<double> g = got.to_doubles();
  std::ostringstream bad;
  int nbad = 0;
  bad.precision(17);
  for (size_t i = 0; i < g.size(); ++i) {
    double w = want[i];
    bool ok;
    if (std::isnan(w)) {
      ok = std::isnan(g[i]);
    } else if (std::isinf(w)) {
      ok = g[i] == w;
    } else {
      ok = std::abs(g[i] - w) <= allowed(dtype, w, tol);  // false for a NaN got
    }
    if (!ok) {
      if (nbad < 8) {
        bad << "\n  element " << i << " " << shape_str(unravel(static_cast<int64_t>(i), shape)) << ": got " << g[i]
            << ", want " << w << " (allowed " << allowed(dtype, w, tol) << ")";
      }
      ++nbad;
    }
  }
  if (nbad) {
    return ::testing::AssertionFailure() << nbad << " of " << g.size() << " elements of " << dtype_name(dtype)
                                         << shape_str(shape) << " differ:" << bad.str();
  }
  return ::testing::AssertionSuccess();
}

// The same with the dtype taken from `got` (for tests whose expected dtype is obvious).
inline ::testing::AssertionResult matches(const Array& got, const Shape& shape, const std::vector<double>& want,
                                          Tol tol = {}) {
  return matches(got, got.dtype(), shape, want, tol);
}

// The message of the fluxion::Error that `f` raises: "" after a test failure when it raises
// none, or raises another exception (std::bad_alloc included: memory errors must be Errors).
template <class F>
std::string error_message(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "an exception other than fluxion::Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no fluxion::Error raised";
  return "";
}

// Runs f, which must raise fluxion::Error with `part` in its message.
template <class F>
void expect_error_containing(F f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no Error; expected one saying '" << part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace fluxion::testing

// EXPECT_ARRAY(got, dtype, shape, want[, tol]): see fluxion::testing::matches (dtype may be left out).
#define EXPECT_ARRAY(got, ...) EXPECT_TRUE(::fluxion::testing::matches((got), __VA_ARGS__))

// Skips a test that checks f64 results on a backend that cannot run f64 programs.
#define FLUXION_REQUIRE_F64(backend)          \
  if (!::fluxion::testing::runs_f64(backend)) \
  GTEST_SKIP() << "the Vulkan device has no shaderFloat64, and this test checks f64 results"

#define FLUXION_INSTANTIATE_BACKENDS(suite)                                                       \
  INSTANTIATE_TEST_SUITE_P(Backends, suite, ::testing::ValuesIn(::fluxion::available_backends()), \
                           ::fluxion::testing::backend_param_name)
