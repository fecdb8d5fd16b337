// Helpers for the interpreter tests: build small programs with Region::add (which runs the
// shape rules), verify them, and run them on the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "eval/interpreter.h"
#include "fluxion/array.h"
#include "fluxion/error.h"
#include "ir/ir.h"

namespace interp_test {

namespace fx = fluxion;
namespace ir = fluxion::ir;
using fx::Array;
using fx::DType;
using fx::Shape;
using fx::TensorType;
using ir::Op;
using ir::ValueId;

// Attributes set by a lambda: ir::Attrs{.axes = ...} trips -Wmissing-field-initializers.
template <class F>
ir::Attrs attrs(F set) {
  ir::Attrs a;
  set(a);
  return a;
}
inline ir::Attrs axes(std::vector<int64_t> ax) {
  return attrs([&](ir::Attrs& a) { a.axes = std::move(ax); });
}

// Adds a node and returns its results (a copy: later adds may move the node's storage).
inline std::vector<ValueId> ops(ir::Region& r, Op op, std::vector<ValueId> in, ir::Attrs a = {},
                                std::vector<TensorType> declared = {}, std::vector<ir::Region> regions = {}) {
  return r.add(op, std::move(in), std::move(a), std::move(declared), std::move(regions));
}
// Adds a single-result node and returns its result.
inline ValueId op(ir::Region& r, Op o, std::vector<ValueId> in, ir::Attrs a = {}, std::vector<TensorType> declared = {},
                  std::vector<ir::Region> regions = {}) {
  return ops(r, o, std::move(in), std::move(a), std::move(declared), std::move(regions)).at(0);
}
inline ValueId constant(ir::Region& r, TensorType t, std::vector<double> data) {
  return op(r, Op::Constant, {}, attrs([&](ir::Attrs& a) { a.data = std::move(data); }), {std::move(t)});
}

// Verifies `body` (with `results` as its results) as a program and runs it.
inline std::vector<Array> run(ir::Region body, std::vector<ValueId> results, const std::vector<Array>& in) {
  body.results = std::move(results);
  ir::Program p;
  p.body = std::move(body);
  ir::verify(p);
  return fx::eval::run(p, in);
}

// One unary or binary op on the given inputs, run as a whole program.
inline Array run_op(Op o, const std::vector<Array>& in, ir::Attrs a = {}, std::vector<TensorType> declared = {}) {
  ir::Region r;
  std::vector<ValueId> params;
  for (const Array& x : in) params.push_back(r.add_param(x.type()));
  ValueId y = op(r, o, params, std::move(a), std::move(declared));
  return run(std::move(r), {y}, in).at(0);
}

inline Array f64(std::vector<double> v, Shape s) { return Array(v, std::move(s)); }
inline Array f64(std::vector<double> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Array(v, {n});
}
inline Array f32(std::vector<float> v, Shape s) { return Array(v, std::move(s)); }
inline Array f32(std::vector<float> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Array(v, {n});
}
inline Array i32(std::vector<int32_t> v, Shape s) { return Array(v, std::move(s)); }
inline Array i32(std::vector<int32_t> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Array(v, {n});
}
inline Array boolean(std::vector<bool> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Array(v, {n});
}

// Element-wise equality where NaN equals NaN.
inline void expect_same(const std::vector<double>& got, const std::vector<double>& want, const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " [" << i << "] = " << got[i] << ", expected NaN";
    } else {
      EXPECT_EQ(got[i], want[i]) << what << " [" << i << "]";
    }
  }
}

// Element-wise closeness for values computed in a different order than the interpreter's.
inline void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol,
                        const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " [" << i << "]";
}

// Deterministic, varied test data: small values with a fractional part, some negative.
inline std::vector<double> pattern(int64_t n, int seed = 1) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>((i * 7 + seed * 13) % 11) - 5.0 + 0.25 * static_cast<double>(seed);
  return v;
}

}  // namespace interp_test
