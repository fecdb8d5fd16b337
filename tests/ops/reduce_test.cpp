// Reductions: sum, mean, max, min over single axes, several axes (in any order), negative axes,
// all axes, keepdims, Axes::none() and zero-size axes; argmax / argmin with ties and keepdims.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/test_names.h"

using fx::Axes;

namespace {

enum class Red { Sum, Mean, Max, Min };

const char* red_name(Red r) {
  switch (r) {
    case Red::Sum: return "sum";
    case Red::Mean: return "mean";
    case Red::Max: return "max";
    case Red::Min: return "min";
  }
  return "?";
}

Tensor apply_red(Red r, const Tensor& x, const Axes& axes, bool keepdims) {
  switch (r) {
    case Red::Sum: return fx::sum(x, axes, keepdims);
    case Red::Mean: return fx::mean(x, axes, keepdims);
    case Red::Max: return fx::max(x, axes, keepdims);
    case Red::Min: return fx::min(x, axes, keepdims);
  }
  return x;
}

struct RefResult {
  Shape shape;
  std::vector<double> values;
};

// Naive reduction of x (shape s) over `axes` (already normalised, any order, no duplicates).
RefResult reduce_ref(Red r, DType dt, const std::vector<double>& x, const Shape& s, std::vector<int64_t> axes,
                     bool keepdims) {
  std::vector<bool> red(s.size(), false);
  for (int64_t a : axes) red[static_cast<size_t>(a)] = true;
  Shape kept;  // with reduced dims as 1
  Shape out;
  for (size_t d = 0; d < s.size(); ++d) {
    kept.push_back(red[d] ? 1 : s[d]);
    if (!red[d] || keepdims) out.push_back(red[d] ? 1 : s[d]);
  }
  double init = 0;
  if (r == Red::Max) init = dt == fx::i32 ? std::numeric_limits<int32_t>::min() : -kInf;
  if (r == Red::Min) init = dt == fx::i32 ? std::numeric_limits<int32_t>::max() : kInf;
  std::vector<double> acc(static_cast<size_t>(count(kept)), init);
  std::vector<int64_t> n(acc.size(), 0);
  for (int64_t i = 0; i < count(s); ++i) {
    std::vector<int64_t> idx = unravel(i, s);
    for (size_t d = 0; d < s.size(); ++d) {
      if (red[d]) idx[d] = 0;
    }
    size_t o = static_cast<size_t>(ravel(idx, kept));
    double v = x[static_cast<size_t>(i)];
    ++n[o];
    if (r == Red::Sum || r == Red::Mean) acc[o] += v;
    if (r == Red::Max) acc[o] = std::isnan(v) || std::isnan(acc[o]) ? kNaN : std::max(acc[o], v);
    if (r == Red::Min) acc[o] = std::isnan(v) || std::isnan(acc[o]) ? kNaN : std::min(acc[o], v);
  }
  if (r == Red::Mean) {
    for (size_t o = 0; o < acc.size(); ++o) acc[o] = n[o] == 0 ? kNaN : acc[o] / static_cast<double>(n[o]);
  }
  return {out, round_all(dt, acc)};
}

std::vector<int64_t> normalise(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) out.push_back(a < 0 ? a + rank : a);
  return out;
}

std::string axes_str(const std::vector<int64_t>& a) { return fx::shape_str(a); }

}  // namespace

class Reduce : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Reduce);

TEST_P(Reduce, OverAxesSubsetsWithAndWithoutKeepdims) {
  const Shape s{2, 3, 4};
  const std::vector<std::vector<int64_t>> axis_sets{{0},    {1},     {2},     {-1},      {-3},        {0, 2},
                                                    {2, 0}, {-1, 0}, {1, -1}, {0, 1, 2}, {-1, -2, -3}};
  uint32_t seed = 10;
  for (Red r : {Red::Sum, Red::Mean, Red::Max, Red::Min}) {
    for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64, fx::i32})) {
      if (r == Red::Mean && dt == fx::i32) continue;  // mean needs a float dtype
      std::vector<double> x = random_values(dt, count(s), -10, 10, seed++);
      for (const auto& ax : axis_sets) {
        for (bool keep : {false, true}) {
          SCOPED_TRACE(std::string(red_name(r)) + " " + fx::dtype_name(dt) + " axes " + axes_str(ax) +
                       (keep ? " keepdims" : ""));
          auto f = jit([r, ax, keep](Tensor t) { return apply_red(r, t, Axes(ax), keep); });
          RefResult want = reduce_ref(r, dt, x, s, normalise(ax, 3), keep);
          EXPECT_ARRAY(f(make(dt, x, s)), dt, want.shape, want.values, Tol::sum(24, 10));
        }
      }
    }
  }
}

TEST_P(Reduce, SingleAxisAsInteger) {
  std::vector<double> x = random_values(fx::f32, 12, -1, 1, 3);
  auto f = jit([](Tensor t) {
    return std::make_tuple(fx::sum(t, 1), fx::sum(t, -2, true), fx::max(t, 0), fx::min(t, -1, true), fx::mean(t, 1));
  });
  auto [s1, s0k, m0, n1k, me1] = f(make(fx::f32, x, {3, 4}));
  RefResult w;
  w = reduce_ref(Red::Sum, fx::f32, x, {3, 4}, {1}, false);
  EXPECT_ARRAY(s1, fx::f32, w.shape, w.values, Tol::sum(4));
  w = reduce_ref(Red::Sum, fx::f32, x, {3, 4}, {0}, true);
  EXPECT_ARRAY(s0k, fx::f32, {1, 4}, w.values, Tol::sum(3));
  w = reduce_ref(Red::Max, fx::f32, x, {3, 4}, {0}, false);
  EXPECT_ARRAY(m0, fx::f32, {4}, w.values);
  w = reduce_ref(Red::Min, fx::f32, x, {3, 4}, {1}, true);
  EXPECT_ARRAY(n1k, fx::f32, {3, 1}, w.values);
  w = reduce_ref(Red::Mean, fx::f32, x, {3, 4}, {1}, false);
  EXPECT_ARRAY(me1, fx::f32, {3}, w.values, Tol::sum(4));
}

TEST_P(Reduce, AllAxesByDefaultAndNone) {
  FLUXION_REQUIRE_F64(backend());
  const Shape s{3, 1, 5};
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64, fx::i32})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    std::vector<double> x = random_values(dt, count(s), -5, 5, 77);
    auto f = jit([](Tensor t) {
      return std::make_tuple(fx::sum(t), fx::max(t), fx::min(t), fx::sum(t, {}, true), fx::sum(t, Axes::none()),
                             fx::max(t, Axes::none(), true), fx::sum(t, Axes()));
    });
    auto [sum_all, max_all, min_all, sum_keep, sum_none, max_none, sum_default] = f(make(dt, x, s));
    RefResult w = reduce_ref(Red::Sum, dt, x, s, {0, 1, 2}, false);
    EXPECT_ARRAY(sum_all, dt, {}, w.values, Tol::sum(15, 5));
    EXPECT_ARRAY(sum_default, dt, {}, w.values, Tol::sum(15, 5));
    EXPECT_ARRAY(sum_keep, dt, {1, 1, 1}, w.values, Tol::sum(15, 5));
    EXPECT_ARRAY(max_all, dt, {}, {*std::max_element(x.begin(), x.end())});
    EXPECT_ARRAY(min_all, dt, {}, {*std::min_element(x.begin(), x.end())});
    // Axes::none() reduces nothing.
    EXPECT_ARRAY(sum_none, dt, s, x);
    EXPECT_ARRAY(max_none, dt, s, x);
  }
  {
    // mean over everything, f64
    std::vector<double> x = random_values(fx::f64, 15, -5, 5, 78);
    auto f = jit([](Tensor t) { return std::make_pair(fx::mean(t), fx::mean(t, {}, true)); });
    auto [m, mk] = f(make(fx::f64, x, s));
    double total = 0;
    for (double v : x) total += v;
    EXPECT_ARRAY(m, fx::f64, {}, {total / 15}, Tol::sum(15, 5));
    EXPECT_ARRAY(mk, fx::f64, {1, 1, 1}, {total / 15}, Tol::sum(15, 5));
  }
  // A rank-0 operand: reducing "all" of its zero axes returns it.
  auto g = jit([](Tensor t) { return std::make_tuple(fx::sum(t), fx::max(t), fx::mean(t)); });
  auto [gs, gm, gme] = g(Array::scalar(2.5f));
  EXPECT_ARRAY(gs, fx::f32, {}, {2.5});
  EXPECT_ARRAY(gm, fx::f32, {}, {2.5});
  EXPECT_ARRAY(gme, fx::f32, {}, {2.5});
}

TEST_P(Reduce, ZeroSizeAxes) {
  // x: f32[0,3]. sum over the empty axis is 0, max -inf, min +inf, mean 0/0 = NaN.
  auto f = jit([](Tensor t) {
    return std::vector<Tensor>{fx::sum(t, 0), fx::max(t, 0), fx::min(t, 0), fx::mean(t, 0),
                               fx::sum(t, 1), fx::sum(t),    fx::max(t),    fx::sum(t, 0, true)};
  });
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    std::vector<Array> r = f(make(dt, {}, {0, 3}));
    ASSERT_EQ(r.size(), 8u);
    EXPECT_ARRAY(r[0], dt, {3}, {0, 0, 0});
    EXPECT_ARRAY(r[1], dt, {3}, {-kInf, -kInf, -kInf});
    EXPECT_ARRAY(r[2], dt, {3}, {kInf, kInf, kInf});
    EXPECT_ARRAY(r[3], dt, {3}, {kNaN, kNaN, kNaN});
    EXPECT_ARRAY(r[4], dt, {0}, {});
    EXPECT_ARRAY(r[5], dt, {}, {0});
    EXPECT_ARRAY(r[6], dt, {}, {-kInf});
    EXPECT_ARRAY(r[7], dt, {1, 3}, {0, 0, 0});
  }
  // i32: sum 0, max INT32_MIN, min INT32_MAX (docs/ir.md).
  auto g = jit([](Tensor t) { return std::make_tuple(fx::sum(t, 1), fx::max(t, 1), fx::min(t, {1}, true)); });
  auto [s, mx, mn] = g(make(fx::i32, {}, {2, 0}));
  EXPECT_ARRAY(s, fx::i32, {2}, {0, 0});
  EXPECT_ARRAY(mx, fx::i32, {2}, {-2147483648.0, -2147483648.0});
  EXPECT_ARRAY(mn, fx::i32, {2, 1}, {2147483647, 2147483647});
  // A zero-size dimension that is not reduced: the result is empty.
  auto h = jit([](Tensor t) { return fx::sum(t, 1); });
  EXPECT_ARRAY(h(make(fx::f32, {}, {0, 4, 2})), fx::f32, {0, 2}, {});
  EXPECT_ARRAY(h(make(fx::f32, {}, {2, 0, 2})), fx::f32, {2, 2}, {0, 0, 0, 0});
}

TEST_P(Reduce, MaxMinPropagateNaN) {
  auto f = jit([](Tensor t) { return std::make_tuple(fx::max(t, 1), fx::min(t, 1), fx::sum(t, 1)); });
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto [mx, mn, s] = f(make(dt, {1, kNaN, 3, 4, 5, 6, kNaN, 0, -1}, {3, 3}));
    EXPECT_ARRAY(mx, dt, {3}, {kNaN, 6, kNaN});
    EXPECT_ARRAY(mn, dt, {3}, {kNaN, 4, kNaN});
    EXPECT_ARRAY(s, dt, {3}, {kNaN, 15, kNaN});
  }
}

// ---- argmax / argmin.

namespace {
// Index of the first maximum (or minimum) along `axis`; NaN counts as the extreme.
RefResult arg_ref(bool is_max, const std::vector<double>& x, const Shape& s, int64_t axis, bool keepdims) {
  Shape out, kept = s;
  kept[static_cast<size_t>(axis)] = 1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (static_cast<int64_t>(d) != axis || keepdims) out.push_back(static_cast<int64_t>(d) == axis ? 1 : s[d]);
  }
  std::vector<double> res(static_cast<size_t>(count(kept)));
  for (int64_t o = 0; o < count(kept); ++o) {
    std::vector<int64_t> idx = unravel(o, kept);
    int64_t best = 0;
    double bv = 0;
    for (int64_t k = 0; k < s[static_cast<size_t>(axis)]; ++k) {
      idx[static_cast<size_t>(axis)] = k;
      double v = x[static_cast<size_t>(ravel(idx, s))];
      if (k == 0) {
        bv = v;
        continue;
      }
      if (std::isnan(bv)) break;
      if (std::isnan(v) || (is_max ? v > bv : v < bv)) {
        best = k;
        bv = v;
      }
    }
    res[static_cast<size_t>(o)] = static_cast<double>(best);
  }
  return {out, res};
}
}  // namespace

TEST_P(Reduce, ArgmaxArgminFirstOfTies) {
  // Rows with ties: [1,3,3,2], [5,5,5,5], [-1,-2,-2,-1].
  std::vector<double> x{1, 3, 3, 2, 5, 5, 5, 5, -1, -2, -2, -1};
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64, fx::i32})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto f = jit([](Tensor t) {
      return std::vector<Tensor>{fx::argmax(t, 1), fx::argmin(t, 1),       fx::argmax(t, -1, true),
                                 fx::argmax(t, 0), fx::argmin(t, 0, true), fx::argmin(t, -2)};
    });
    std::vector<Array> r = f(make(dt, x, {3, 4}));
    ASSERT_EQ(r.size(), 6u);
    EXPECT_ARRAY(r[0], fx::i32, {3}, {1, 0, 0});
    EXPECT_ARRAY(r[1], fx::i32, {3}, {0, 0, 1});
    EXPECT_ARRAY(r[2], fx::i32, {3, 1}, {1, 0, 0});
    EXPECT_ARRAY(r[3], fx::i32, {4}, {1, 1, 1, 1});
    EXPECT_ARRAY(r[4], fx::i32, {1, 4}, {2, 2, 2, 2});
    EXPECT_ARRAY(r[5], fx::i32, {4}, {2, 2, 2, 2});
  }
}

TEST_P(Reduce, ArgmaxArgminRandomEveryAxis) {
  const Shape s{2, 3, 4};
  uint32_t seed = 900;
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64, fx::i32})) {
    // Small integer values so that ties are frequent.
    std::vector<double> x = random_ints(count(s), -3, 3, seed++);
    for (int64_t axis = -3; axis < 3; ++axis) {
      for (bool keep : {false, true}) {
        for (bool is_max : {true, false}) {
          SCOPED_TRACE(std::string(is_max ? "argmax " : "argmin ") + fx::dtype_name(dt) + " axis " +
                       std::to_string(axis) + (keep ? " keepdims" : ""));
          auto f = jit([axis, keep, is_max](Tensor t) {
            return is_max ? fx::argmax(t, axis, keep) : fx::argmin(t, axis, keep);
          });
          RefResult want = arg_ref(is_max, x, s, axis < 0 ? axis + 3 : axis, keep);
          EXPECT_ARRAY(f(make(dt, x, s)), fx::i32, want.shape, want.values);
        }
      }
    }
  }
  // 1-D and a size-1 axis.
  auto f = jit([](Tensor t) { return std::make_pair(fx::argmax(t, 0), fx::argmin(t, 0)); });
  auto [am, an] = f(make(fx::f32, {0.5, -2, 7, 7, -2}, {5}));
  EXPECT_ARRAY(am, fx::i32, {}, {2});
  EXPECT_ARRAY(an, fx::i32, {}, {1});
  auto [bm, bn] = f(make(fx::f32, {4, 5}, {1, 2}));
  EXPECT_ARRAY(bm, fx::i32, {2}, {0, 0});
  EXPECT_ARRAY(bn, fx::i32, {2}, {0, 0});
}

// An index reduced again in the same kernel: over a size-1 axis every index is 0 (Vulkan once
// returned the identity of min, INT32_MAX, for the reduction of such indices).
TEST_P(Reduce, ArgminOverASizeOneAxisReducedAgain) {
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto f = jit([](Tensor t) {
      return std::vector<Tensor>{fx::min(fx::argmin(t, 0), fx::Axes{0}), fx::max(fx::argmax(t, 0), fx::Axes{0}),
                                 fx::sum(fx::argmin(t, 0), fx::Axes{0})};
    });
    std::vector<Array> r = f(make(dt, {0.5, -1}, {1, 2}));
    ASSERT_EQ(r.size(), 3u);
    EXPECT_ARRAY(r[0], fx::i32, {}, {0});
    EXPECT_ARRAY(r[1], fx::i32, {}, {0});
    EXPECT_ARRAY(r[2], fx::i32, {}, {0});
  }
}

TEST_P(Reduce, ArgmaxNaNCountsAsExtreme) {
  auto f = jit([](Tensor t) { return std::make_pair(fx::argmax(t, 0), fx::argmin(t, 0)); });
  auto [am, an] = f(make(fx::f32, {1, kNaN, 3, kNaN}, {4}));
  EXPECT_ARRAY(am, fx::i32, {}, {1});
  EXPECT_ARRAY(an, fx::i32, {}, {1});
}
