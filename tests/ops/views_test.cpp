// Views and data movement: reshape (-1), flatten, squeeze, expand_dims, transpose, permute,
// broadcast_to, slice (negative, clamped, steps) and slice_axis, concat, stack, gather (rank r
// and r-1 indices, clamping), take (clamping), one_hot (incl. out of range).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/test_names.h"

namespace {

// 0, 1, 2, ... (so every element is distinguishable).
std::vector<double> iota(int64_t n, double offset = 0) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<double>(i) + offset);
  return v;
}

// Values for dtype t that tell elements apart (bool: a fixed pattern).
std::vector<double> distinct(DType t, int64_t n) {
  if (t == fx::boolean) return random_values(t, n, 0, 1, 5);
  if (t == fx::i32) return iota(n, -3);
  return round_all(t, iota(n, 0.25));
}

const DType kAll[] = {fx::f32, fx::f64, fx::i32, fx::boolean};

// x[starts:stops:steps] per dimension, Python semantics.
struct SliceRef {
  Shape shape;
  std::vector<double> values;
};
SliceRef slice_ref(const std::vector<double>& x, const Shape& s, const std::vector<int64_t>& starts,
                   const std::vector<int64_t>& stops, const std::vector<int64_t>& steps) {
  auto norm = [](int64_t i, int64_t d) { return std::clamp<int64_t>(i < 0 ? i + d : i, 0, d); };
  Shape out;
  std::vector<int64_t> lo;
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t a = norm(starts[d], s[d]), b = norm(stops[d], s[d]);
    lo.push_back(a);
    out.push_back(b > a ? (b - a + steps[d] - 1) / steps[d] : 0);
  }
  std::vector<double> v;
  for (int64_t i = 0; i < count(out); ++i) {
    std::vector<int64_t> idx = unravel(i, out);
    for (size_t d = 0; d < s.size(); ++d) idx[d] = lo[d] + idx[d] * steps[d];
    v.push_back(x[static_cast<size_t>(ravel(idx, s))]);
  }
  return {out, v};
}

// Result dimension i is x's dimension perm[i].
std::vector<double> permute_ref(const std::vector<double>& x, const Shape& s, const std::vector<int64_t>& perm,
                                Shape* out_shape) {
  Shape os;
  for (int64_t p : perm) os.push_back(s[static_cast<size_t>(p)]);
  std::vector<double> v;
  for (int64_t i = 0; i < count(os); ++i) {
    std::vector<int64_t> idx = unravel(i, os), src(s.size());
    for (size_t d = 0; d < perm.size(); ++d) src[static_cast<size_t>(perm[d])] = idx[d];
    v.push_back(x[static_cast<size_t>(ravel(src, s))]);
  }
  *out_shape = os;
  return v;
}

int64_t clampi(double i, int64_t d) { return std::clamp<int64_t>(static_cast<int64_t>(i), 0, d - 1); }

}  // namespace

class Views : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Views);

TEST_P(Views, ReshapeFlattenSqueezeExpandDims) {
  FLUXION_REQUIRE_F64(backend());
  for (DType dt : kAll) {
    SCOPED_TRACE(fx::dtype_name(dt));
    std::vector<double> x = distinct(dt, 24);
    Array a = make(dt, x, {2, 3, 4});
    auto f = jit([](Tensor t) {
      return std::vector<Tensor>{fx::reshape(t, {4, -1}), fx::reshape(t, {-1}),      fx::reshape(t, {2, -1, 2}),
                                 fx::reshape(t, {3, 8}), fx::flatten(t),             fx::flatten(t, 1),
                                 fx::flatten(t, -1),     fx::expand_dims(t, 0),      fx::expand_dims(t, -1),
                                 fx::expand_dims(t, 2),  fx::reshape(t, {1, 24, 1})};
    });
    std::vector<Array> r = f(a);
    ASSERT_EQ(r.size(), 11u);
    const std::vector<Shape> shapes{{4, 6}, {24}, {2, 6, 2}, {3, 8}, {24}, {2, 12}, {2, 3, 4}, {1, 2, 3, 4},
                                    {2, 3, 4, 1}, {2, 3, 1, 4}, {1, 24, 1}};
    for (size_t i = 0; i < r.size(); ++i) EXPECT_ARRAY(r[i], dt, shapes[i], x) << "output " << i;
    auto g = jit([](Tensor t) { return std::make_tuple(fx::squeeze(t, 1), fx::squeeze(t, -2), fx::squeeze(t, 0)); });
    auto [s1, s2, s3] = g(make(dt, distinct(dt, 3), {1, 1, 3}));
    EXPECT_ARRAY(s1, dt, {1, 3}, distinct(dt, 3));
    EXPECT_ARRAY(s2, dt, {1, 3}, distinct(dt, 3));
    EXPECT_ARRAY(s3, dt, {1, 3}, distinct(dt, 3));
  }
  // Rank 0 and zero-size.
  auto h = jit([](Tensor t) {
    return std::make_tuple(fx::reshape(t, {1, 1}), fx::flatten(t), fx::expand_dims(t, 0),
                           fx::squeeze(fx::expand_dims(t, -1), 0));
  });
  auto [r11, fl, ex, sq] = h(Array::scalar(4.5f));
  EXPECT_ARRAY(r11, fx::f32, {1, 1}, {4.5});
  EXPECT_ARRAY(fl, fx::f32, {1}, {4.5});
  EXPECT_ARRAY(ex, fx::f32, {1}, {4.5});
  EXPECT_ARRAY(sq, fx::f32, {}, {4.5});
  auto z = jit([](Tensor t) { return std::make_pair(fx::reshape(t, {3, 0}), fx::flatten(t)); });
  auto [z1, z2] = z(make(fx::f32, {}, {0, 3}));
  EXPECT_ARRAY(z1, fx::f32, {3, 0}, {});
  EXPECT_ARRAY(z2, fx::f32, {0}, {});
}

// flatten(x, 1) of a zero-size [0, 3] is [0, 3] (as torch.flatten): the kept leading dims are
// known, so nothing needs inferring.
TEST_P(Views, FlattenZeroSize) {
  auto f = jit([](Tensor t) { return fx::flatten(t, 1); });
  Array r;
  ASSERT_NO_THROW(r = f(make(fx::f32, {}, {0, 3, 2})));
  EXPECT_ARRAY(r, fx::f32, {0, 6}, {});
  auto g = jit([](Tensor t) { return fx::flatten(t, 2); });
  Array y;
  ASSERT_NO_THROW(y = g(make(fx::i32, {}, {2, 0, 2, 2})));
  EXPECT_ARRAY(y, fx::i32, {2, 0, 4}, {});
}

TEST_P(Views, TransposeAndPermute) {
  FLUXION_REQUIRE_F64(backend());
  for (DType dt : kAll) {
    SCOPED_TRACE(fx::dtype_name(dt));
    Shape s{2, 3, 4};
    std::vector<double> x = distinct(dt, 24);
    for (std::vector<int64_t> perm : {std::vector<int64_t>{1, 2, 0}, {2, 0, 1}, {0, 2, 1}, {2, 1, 0}, {0, 1, 2}}) {
      SCOPED_TRACE("perm " + str(perm));
      auto f = jit([perm](Tensor t) { return fx::permute(t, perm); });
      Shape os;
      std::vector<double> want = permute_ref(x, s, perm, &os);
      EXPECT_ARRAY(f(make(dt, x, s)), dt, os, want);
    }
    // Negative entries in perm; transpose reverses the dimensions.
    auto g = jit([](Tensor t) { return std::make_pair(fx::permute(t, {-1, 0, 1}), fx::transpose(t)); });
    auto [p, t] = g(make(dt, x, s));
    Shape os;
    std::vector<double> want = permute_ref(x, s, {2, 0, 1}, &os);
    EXPECT_ARRAY(p, dt, os, want);
    want = permute_ref(x, s, {2, 1, 0}, &os);
    EXPECT_ARRAY(t, dt, os, want);
  }
  auto tr = jit([](Tensor t) { return fx::transpose(t); });
  EXPECT_ARRAY(tr(make(fx::f32, {1, 2, 3, 4, 5, 6}, {2, 3})), fx::f32, {3, 2}, {1, 4, 2, 5, 3, 6});
  EXPECT_ARRAY(tr(make(fx::f32, {1, 2, 3}, {3})), fx::f32, {3}, {1, 2, 3});
  EXPECT_ARRAY(tr(make(fx::f32, {}, {0, 2})), fx::f32, {2, 0}, {});
}

TEST_P(Views, BroadcastTo) {
  FLUXION_REQUIRE_F64(backend());
  struct Case {
    Shape from, to;
  };
  std::vector<Case> cases{{{3}, {2, 3}}, {{2, 1}, {2, 4}}, {{}, {2, 2}}, {{1, 3}, {4, 2, 3}},
                          {{1, 3}, {0, 3}}, {{2, 1, 1}, {2, 3, 2}}, {{3}, {3}}};
  for (DType dt : kAll) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(fx::dtype_name(dt)) + str(c.from) + " -> " + str(c.to));
      std::vector<double> x = distinct(dt, count(c.from));
      auto f = jit([to = c.to](Tensor t) { return fx::broadcast_to(t, to); });
      EXPECT_ARRAY(f(make(dt, x, c.from)), dt, c.to, broadcast_values(x, c.from, c.to));
    }
  }
}

TEST_P(Views, SliceNegativeClampedAndStepped) {
  FLUXION_REQUIRE_F64(backend());
  struct Case {
    std::vector<int64_t> starts, stops, steps;
  };
  const Shape s{5, 6};
  std::vector<Case> cases{
      {{1, 2}, {4, 5}, {}},                  // plain
      {{1, -4}, {4, -1}, {1, 2}},            // negative indices
      {{-100, 0}, {100, 6}, {2, 3}},         // clamped, stepped
      {{3, 5}, {1, 2}, {1, 1}},              // stop before start: empty
      {{0, 0}, {5, 6}, {5, 7}},              // steps larger than the dim
      {{-1, -6}, {100, -5}, {1, 1}},         // last row, first column
      {{4, 1}, {5, 100}, {3, 4}},            // {4} and {1, 5}
      {{-7, 7}, {-6, 9}, {1, 1}},            // both clamped to empty
      {{0, 1}, {5, 6}, {2, 2}},
  };
  for (DType dt : kAll) {
    std::vector<double> x = distinct(dt, 30);
    for (const Case& c : cases) {
      std::vector<int64_t> steps = c.steps.empty() ? std::vector<int64_t>{1, 1} : c.steps;
      SCOPED_TRACE(std::string(fx::dtype_name(dt)) + " starts " + str(c.starts) + " stops " + str(c.stops) +
                   " steps " + str(steps));
      auto f = jit([c](Tensor t) { return fx::slice(t, c.starts, c.stops, c.steps); });
      SliceRef want = slice_ref(x, s, c.starts, c.stops, steps);
      EXPECT_ARRAY(f(make(dt, x, s)), dt, want.shape, want.values);
    }
  }
  // By hand: x = 0..9; x[-3:] = [7,8,9]; x[1:8:3] = [1,4,7]; x[-100:2] = [0,1].
  auto g = jit([](Tensor t) {
    return std::make_tuple(fx::slice(t, {-3}, {100}), fx::slice(t, {1}, {8}, {3}), fx::slice(t, {-100}, {2}));
  });
  auto [a, b, c] = g(make(fx::i32, iota(10), {10}));
  EXPECT_ARRAY(a, fx::i32, {3}, {7, 8, 9});
  EXPECT_ARRAY(b, fx::i32, {3}, {1, 4, 7});
  EXPECT_ARRAY(c, fx::i32, {2}, {0, 1});
}

TEST_P(Views, SliceAxis) {
  const Shape s{3, 4, 5};
  std::vector<double> x = distinct(fx::f32, 60);
  struct Case {
    int64_t axis, start, stop, step;
  };
  for (const Case& c : std::vector<Case>{{1, -3, 100, 2}, {-2, 1, -1, 1}, {0, 2, 3, 1}, {2, 0, 5, 2}, {-1, -2, 5, 1},
                                         {0, 5, 9, 1}, {2, -100, -4, 1}}) {
    SCOPED_TRACE("axis " + std::to_string(c.axis) + " " + std::to_string(c.start) + ":" + std::to_string(c.stop) +
                 ":" + std::to_string(c.step));
    auto f = jit([c](Tensor t) { return fx::slice_axis(t, c.axis, c.start, c.stop, c.step); });
    int64_t ax = c.axis < 0 ? c.axis + 3 : c.axis;
    std::vector<int64_t> starts{0, 0, 0}, stops{3, 4, 5}, steps{1, 1, 1};
    starts[static_cast<size_t>(ax)] = c.start;
    stops[static_cast<size_t>(ax)] = c.stop;
    steps[static_cast<size_t>(ax)] = c.step;
    SliceRef want = slice_ref(x, s, starts, stops, steps);
    EXPECT_ARRAY(f(make(fx::f32, x, s)), fx::f32, want.shape, want.values);
  }
}

TEST_P(Views, ConcatAndStack) {
  FLUXION_REQUIRE_F64(backend());
  for (DType dt : kAll) {
    SCOPED_TRACE(fx::dtype_name(dt));
    std::vector<double> a = distinct(dt, 6), b = distinct(dt, 3), c = distinct(dt, 4);
    if (dt != fx::boolean) {
      for (double& v : b) v += 100;
      for (double& v : c) v += 200;
    }
    // Axis 0: [2,3] + [1,3] -> [3,3].
    auto f0 = jit([](Tensor x, Tensor y) { return fx::concat({x, y}, 0); });
    std::vector<double> want = a;
    want.insert(want.end(), b.begin(), b.end());
    EXPECT_ARRAY(f0(make(dt, a, {2, 3}), make(dt, b, {1, 3})), dt, {3, 3}, want);
    // Axis -1 / 1 with three inputs: [2,3] + [2,1]... as [2,3], [2,2], [2,... ]
    auto f1 = jit([](Tensor x, Tensor y, Tensor z) {
      return std::make_pair(fx::concat({x, y, z}, 1), fx::concat({x, y, z}, -1));
    });
    auto [c1, cm1] = f1(make(dt, a, {2, 3}), make(dt, {b[0], b[1]}, {2, 1}), make(dt, c, {2, 2}));
    std::vector<double> w1{a[0], a[1], a[2], b[0], c[0], c[1], a[3], a[4], a[5], b[1], c[2], c[3]};
    EXPECT_ARRAY(c1, dt, {2, 6}, w1);
    EXPECT_ARRAY(cm1, dt, {2, 6}, w1);
    // A zero-size part and a single input.
    auto f2 = jit([](Tensor x, Tensor y) { return std::make_pair(fx::concat({x, y}, 1), fx::concat({x}, 0)); });
    auto [cz, single] = f2(make(dt, {}, {2, 0, 3}), make(dt, a, {2, 1, 3}));
    EXPECT_ARRAY(cz, dt, {2, 1, 3}, a);
    EXPECT_ARRAY(single, dt, {2, 0, 3}, {});
    // stack along 0, 1, -1.
    auto s = jit([](Tensor x, Tensor y) {
      return std::make_tuple(fx::stack({x, y}, 0), fx::stack({x, y}, 1), fx::stack({x, y}, -1));
    });
    std::vector<double> p = distinct(dt, 6), q = p;
    if (dt != fx::boolean) {
      for (double& v : q) v += 50;
    } else {
      for (double& v : q) v = 1 - v;
    }
    auto [s0, s1, sm1] = s(make(dt, p, {2, 3}), make(dt, q, {2, 3}));
    std::vector<double> w0 = p;
    w0.insert(w0.end(), q.begin(), q.end());
    EXPECT_ARRAY(s0, dt, {2, 2, 3}, w0);
    EXPECT_ARRAY(s1, dt, {2, 2, 3}, {p[0], p[1], p[2], q[0], q[1], q[2], p[3], p[4], p[5], q[3], q[4], q[5]});
    EXPECT_ARRAY(sm1, dt, {2, 3, 2}, {p[0], q[0], p[1], q[1], p[2], q[2], p[3], q[3], p[4], q[4], p[5], q[5]});
  }
  // Stacking scalars.
  auto s = jit([](Tensor x, Tensor y, Tensor z) { return fx::stack({x, y, z}); });
  EXPECT_ARRAY(s(Array::scalar(1.0f), Array::scalar(2.0f), Array::scalar(3.0f)), fx::f32, {3}, {1, 2, 3});
}

TEST_P(Views, GatherRankR) {
  FLUXION_REQUIRE_F64(backend());
  // x [3,4]; axis 1 with indices [3,2]: out[i][j] = x[i][idx[i][j]] (clamped).
  std::vector<double> x = distinct(fx::f32, 12);
  std::vector<double> idx{0, 3, 2, 2, -1, 7};
  auto f = jit([](Tensor t, Tensor i) { return fx::gather(t, i, 1); });
  std::vector<double> want;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 2; ++j) want.push_back(x[static_cast<size_t>(i * 4 + clampi(idx[static_cast<size_t>(i * 2 + j)], 4))]);
  EXPECT_ARRAY(f(make(fx::f32, x, {3, 4}), make(fx::i32, idx, {3, 2})), fx::f32, {3, 2}, want);
  // By hand with the clamping: row 2 picks x[2][0] (-1 -> 0) and x[2][3] (7 -> 3).
  EXPECT_EQ(want[4], x[8]);
  EXPECT_EQ(want[5], x[11]);
  // axis 0 with indices [2,4]: out[i][j] = x[idx[i][j]][j].
  std::vector<double> idx0{2, 0, 1, 5, -3, 1, 2, 0};
  auto g = jit([](Tensor t, Tensor i) { return fx::gather(t, i, 0); });
  want.clear();
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j) want.push_back(x[static_cast<size_t>(clampi(idx0[static_cast<size_t>(i * 4 + j)], 3) * 4 + j)]);
  EXPECT_ARRAY(g(make(fx::f32, x, {3, 4}), make(fx::i32, idx0, {2, 4})), fx::f32, {2, 4}, want);
  // 3-D, axis -1, i32 and f64 data.
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::i32, fx::f64, fx::boolean})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    std::vector<double> y = distinct(dt, 24), id = random_ints(12, -1, 4, 9);
    auto h = jit([](Tensor t, Tensor i) { return fx::gather(t, i, -1); });
    std::vector<double> w;
    for (int64_t p = 0; p < 6; ++p)
      for (int64_t q = 0; q < 2; ++q) w.push_back(y[static_cast<size_t>(p * 4 + clampi(id[static_cast<size_t>(p * 2 + q)], 4))]);
    EXPECT_ARRAY(h(make(dt, y, {2, 3, 4}), make(fx::i32, id, {2, 3, 2})), dt, {2, 3, 2}, w);
  }
}

TEST_P(Views, GatherRankRMinusOneClassLabels) {
  // logits [4,5], labels [4] -> [4]: the logit of each row's label (clamped).
  std::vector<double> logits = random_values(fx::f32, 20, -3, 3, 21);
  std::vector<double> labels{3, 0, 4, 9};
  auto f = jit([](Tensor l, Tensor y) { return fx::gather(l, y, 1); });
  EXPECT_ARRAY(f(make(fx::f32, logits, {4, 5}), make(fx::i32, labels, {4})), fx::f32, {4},
               {logits[3], logits[5], logits[14], logits[19]});
  // Axis 0 with indices [5] on [4,5]: out[j] = x[idx[j]][j].
  std::vector<double> rows{0, 3, -2, 1, 2};
  auto g = jit([](Tensor l, Tensor y) { return fx::gather(l, y, 0); });
  EXPECT_ARRAY(g(make(fx::f32, logits, {4, 5}), make(fx::i32, rows, {5})), fx::f32, {5},
               {logits[0], logits[16], logits[2], logits[8], logits[14]});
  // Negative axis, 1-D x with rank-0 index.
  auto h = jit([](Tensor l, Tensor y) { return fx::gather(l, y, -1); });
  EXPECT_ARRAY(h(make(fx::i32, {10, 20, 30}, {3}), Array::scalar(int32_t{2})), fx::i32, {}, {30});
}

TEST_P(Views, TakeIndexSelect) {
  std::vector<double> x = distinct(fx::f32, 12);  // [4,3]
  // axis 0 with 2-D indices -> [2,2,3] (rows), clamped.
  std::vector<double> idx{3, 0, -5, 10};
  auto f = jit([](Tensor t, Tensor i) { return fx::take(t, i, 0); });
  std::vector<double> want;
  for (double i : idx)
    for (int64_t c = 0; c < 3; ++c) want.push_back(x[static_cast<size_t>(clampi(i, 4) * 3 + c)]);
  EXPECT_ARRAY(f(make(fx::f32, x, {4, 3}), make(fx::i32, idx, {2, 2})), fx::f32, {2, 2, 3}, want);
  // Default axis is 0.
  auto f_default = jit([](Tensor t, Tensor i) { return fx::take(t, i); });
  EXPECT_ARRAY(f_default(make(fx::f32, x, {4, 3}), make(fx::i32, idx, {2, 2})), fx::f32, {2, 2, 3}, want);
  // axis 1 (and -1) with [5] indices -> [4,5].
  std::vector<double> cols{2, 2, 0, 1, 3};
  auto g = jit([](Tensor t, Tensor i) { return std::make_pair(fx::take(t, i, 1), fx::take(t, i, -1)); });
  want.clear();
  for (int64_t r = 0; r < 4; ++r)
    for (double c : cols) want.push_back(x[static_cast<size_t>(r * 3 + clampi(c, 3))]);
  auto [t1, tm1] = g(make(fx::f32, x, {4, 3}), make(fx::i32, cols, {5}));
  EXPECT_ARRAY(t1, fx::f32, {4, 5}, want);
  EXPECT_ARRAY(tm1, fx::f32, {4, 5}, want);
  // A rank-0 index removes the axis; an embedding-style lookup in i32.
  auto h = jit([](Tensor t, Tensor i) { return fx::take(t, i, 0); });
  EXPECT_ARRAY(h(make(fx::f32, x, {4, 3}), Array::scalar(int32_t{2})), fx::f32, {3}, {x[6], x[7], x[8]});
  EXPECT_ARRAY(h(make(fx::i32, {10, 11, 20, 21, 30, 31}, {3, 2}), make(fx::i32, {2, 2, 0}, {3})), fx::i32, {3, 2},
               {30, 31, 30, 31, 10, 11});
  EXPECT_ARRAY(h(make(fx::f32, x, {4, 3}), make(fx::i32, {}, {0})), fx::f32, {0, 3}, {});
}

TEST_P(Views, OneHot) {
  FLUXION_REQUIRE_F64(backend());
  auto f = jit([](Tensor i) { return fx::one_hot(i, 3); });
  EXPECT_ARRAY(f(make(fx::i32, {0, 2, -1, 3, 1}, {5})), fx::f32, {5, 3},
               {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0});
  for (DType dt : kAll) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto g = jit([dt](Tensor i) { return fx::one_hot(i, 4, dt); });
    std::vector<double> idx{1, 3, 0, 4, -2, 2};
    std::vector<double> want;
    for (double i : idx)
      for (int64_t k = 0; k < 4; ++k) want.push_back(static_cast<double>(i) == static_cast<double>(k) ? 1 : 0);
    EXPECT_ARRAY(g(make(fx::i32, idx, {2, 3})), dt, {2, 3, 4}, want);
    EXPECT_ARRAY(g(Array::scalar(int32_t{1})), dt, {4}, {0, 1, 0, 0});
  }
  auto z = jit([](Tensor i) { return fx::one_hot(i, 0); });
  EXPECT_ARRAY(z(make(fx::i32, {0, 1}, {2})), fx::f32, {2, 0}, {});
}

// Reshapes read through a consumer's index math (a permute of a reshape, a reshape of a
// permute): runs of dimensions that merge, split, or only gain or lose unit dimensions.
TEST_P(Views, ReshapesReadThroughIndexMath) {
  // The reshaped value is a slice of the input (a view, with no bytes of its own), so the
  // reshape is read through index math, not as an alias of a buffer.
  std::vector<double> full = random_values(fx::f32, 36, -1, 1, 33);
  std::vector<double> x(full.begin() + 12, full.end());
  struct Case {
    Shape reshaped;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases{{{4, 6}, {1, 0}}, {{6, 4}, {1, 0}}, {{2, 1, 3, 1, 4}, {4, 3, 2, 1, 0}},
                                {{2, 12}, {1, 0}}, {{3, 2, 2, 2}, {3, 1, 0, 2}}, {{24, 1}, {1, 0}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fx::testing::str(c.reshaped));
    auto f = jit([&](Tensor t) { return fx::permute(fx::reshape(fx::slice_axis(t, 0, 1, 3), c.reshaped), c.perm) * 2.0; });
    Shape out;
    for (int64_t d : c.perm) out.push_back(c.reshaped[static_cast<size_t>(d)]);
    std::vector<double> want(24);
    for (int64_t i = 0; i < 24; ++i) {
      std::vector<int64_t> oi = fx::testing::unravel(i, out), ri(c.perm.size());
      for (size_t d = 0; d < c.perm.size(); ++d) ri[static_cast<size_t>(c.perm[d])] = oi[d];
      want[static_cast<size_t>(i)] = 2 * x[static_cast<size_t>(fx::testing::ravel(ri, c.reshaped))];
    }
    EXPECT_ARRAY(f(make(fx::f32, full, {3, 3, 4})), fx::f32, out, want);
  }
  // The other way round: a permute, then a reshape that splits one of its dimensions.
  auto g = jit([](Tensor t) { return fx::reshape(fx::permute(fx::slice_axis(t, 0, 1, 3), {2, 0, 1}), {2, 2, 6}) + 1.0; });
  std::vector<double> want(24);
  for (int64_t i = 0; i < 24; ++i) {
    std::vector<int64_t> pi = fx::testing::unravel(i, {4, 2, 3});  // [k, i, j] of the permute
    want[static_cast<size_t>(i)] = x[static_cast<size_t>(fx::testing::ravel({pi[1], pi[2], pi[0]}, {2, 3, 4}))] + 1;
  }
  EXPECT_ARRAY(g(make(fx::f32, full, {3, 3, 4})), fx::f32, {2, 2, 6}, want);
}

// Views feeding arithmetic and reductions (what fusion will later merge into one kernel).
TEST_P(Views, ComposedViewsAndArithmetic) {
  std::vector<double> x = random_values(fx::f32, 24, -1, 1, 31), w = random_values(fx::f32, 3, -1, 1, 32);
  auto f = jit([](Tensor t, Tensor v) {
    Tensor p = fx::permute(t, {1, 0, 2}) * v;                 // [3,2,4] * [3,1,1]
    Tensor s = fx::transpose(fx::sum(p, -1));                // [2,3]
    Tensor first = fx::squeeze(fx::slice_axis(t, 2, 0, 1), -1);  // x[:, :, 0]: [2,3]
    return fx::reshape(s - first, {-1});
  });
  std::vector<double> want;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < 4; ++k) acc += x[static_cast<size_t>((i * 3 + j) * 4 + k)] * w[static_cast<size_t>(j)];
      want.push_back(acc - x[static_cast<size_t>((i * 3 + j) * 4)]);
    }
  EXPECT_ARRAY(f(make(fx::f32, x, {2, 3, 4}), make(fx::f32, w, {3, 1, 1})), fx::f32, {6}, want, Tol::sum(5));
}

TEST_P(Views, PadWithZeros) {
  auto f = jit([](Tensor x) { return fx::pad(x, {{1, 0}, {0, 2}}); });
  EXPECT_ARRAY(f(make(fx::f32, {1, 2, 3, 4}, {2, 2})), fx::f32, {3, 4}, {0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0});
  auto g = jit([](Tensor x) { return fx::pad(x, {{2, 1}}); });
  EXPECT_ARRAY(g(make(fx::i32, {}, {0})), fx::i32, {3}, {0, 0, 0});
}
