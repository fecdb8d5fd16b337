// Reductions, matmul, conv2d and pooling on the interpreter: hand-computed cases, and general
// cases against naive loops written here.
#include <climits>
#include <cmath>
#include <limits>

#include "interp/program_builder.h"

using namespace interp_test;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

ir::Attrs conv_attrs(std::vector<int64_t> strides, std::vector<int64_t> padding, std::vector<int64_t> dilation,
                     int64_t groups = 1) {
  return attrs([&](ir::Attrs& a) {
    a.strides = strides;
    a.padding = padding;
    a.dilation = dilation;
    a.groups = groups;
  });
}

ir::Attrs pool_attrs(std::vector<int64_t> window, std::vector<int64_t> strides, std::vector<int64_t> padding) {
  return attrs([&](ir::Attrs& a) {
    a.window = window;
    a.strides = strides;
    a.padding = padding;
  });
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

TEST(InterpReduce, SumMaxMinOverAxes) {
  // x[a][b][c] = 100a + 10b + c - 20, shape [2, 3, 2].
  std::vector<double> x;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c) x.push_back(100 * a + 10 * b + c - 20);
  Array in = f64(x, {2, 3, 2});
  Array sum02 = run_op(Op::ReduceSum, {in}, axes({0, 2}));
  EXPECT_EQ(sum02.shape(), (Shape{3}));
  std::vector<double> want(3, 0);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c) want[b] += 100 * a + 10 * b + c - 20;
  expect_same(sum02.to_doubles(), want, "sum over axes 0, 2");
  Array max1 = run_op(Op::ReduceMax, {in}, axes({1}));
  EXPECT_EQ(max1.shape(), (Shape{2, 2}));
  expect_same(max1.to_doubles(), {0, 1, 100, 101}, "max over axis 1");
  Array min_all = run_op(Op::ReduceMin, {in}, axes({0, 1, 2}));
  EXPECT_EQ(min_all.shape(), Shape{});
  expect_same(min_all.to_doubles(), {-20}, "min over everything");
  Array none = run_op(Op::ReduceSum, {in}, axes({}));
  expect_same(none.to_doubles(), x, "reducing no axes is the identity");
}

TEST(InterpReduce, NaNPropagatesAndEmptyAxesGiveIdentities) {
  Array x = f64({1, kNaN, 3});
  expect_same(run_op(Op::ReduceMax, {x}, axes({0})).to_doubles(), {kNaN}, "max");
  expect_same(run_op(Op::ReduceMin, {x}, axes({0})).to_doubles(), {kNaN}, "min");
  expect_same(run_op(Op::ReduceSum, {x}, axes({0})).to_doubles(), {kNaN}, "sum");

  Array empty = f64({}, {2, 0});
  expect_same(run_op(Op::ReduceSum, {empty}, axes({1})).to_doubles(), {0, 0}, "empty sum");
  expect_same(run_op(Op::ReduceMax, {empty}, axes({1})).to_doubles(), {-kInf, -kInf}, "empty max");
  expect_same(run_op(Op::ReduceMin, {empty}, axes({1})).to_doubles(), {kInf, kInf}, "empty min");
  Array empty_f32 = f32({}, {0, 2});
  EXPECT_EQ(run_op(Op::ReduceMax, {empty_f32}, axes({0})).to_vector<float>(),
            (std::vector<float>{-INFINITY, -INFINITY}));
  Array empty_i32 = i32({}, {0, 3});
  EXPECT_EQ(run_op(Op::ReduceMax, {empty_i32}, axes({0})).to_vector<int32_t>(), (std::vector<int32_t>(3, INT_MIN)));
  EXPECT_EQ(run_op(Op::ReduceMin, {empty_i32}, axes({0})).to_vector<int32_t>(), (std::vector<int32_t>(3, INT_MAX)));
  EXPECT_EQ(run_op(Op::ReduceSum, {empty_i32}, axes({0})).to_vector<int32_t>(), (std::vector<int32_t>(3, 0)));
  // Reducing a non-empty axis of an empty array gives an empty result.
  EXPECT_EQ(run_op(Op::ReduceSum, {empty}, axes({0})).shape(), (Shape{0}));
}

TEST(InterpReduce, AccumulatesInDoubleAndWrapsI32) {
  // Summed in float from the left, 1e8 + 1 - 1e8 would give 0; the interpreter sums in double.
  EXPECT_EQ(run_op(Op::ReduceSum, {f32({1e8f, 1.0f, -1e8f})}, axes({0})).to_vector<float>(), (std::vector<float>{1.0f}));
  EXPECT_EQ(run_op(Op::ReduceSum, {i32({INT_MAX, 1})}, axes({0})).to_vector<int32_t>(), (std::vector<int32_t>{INT_MIN}));
  // Wrapping is exact even where a double sum would lose the low bits (past 2^53).
  std::vector<int32_t> big(4500000, INT_MAX);  // the sum passes 2^53
  big.push_back(7);
  uint32_t want = 7;
  for (size_t i = 0; i + 1 < big.size(); ++i) want += static_cast<uint32_t>(INT_MAX);
  EXPECT_EQ(run_op(Op::ReduceSum, {i32(big)}, axes({0})).to_vector<int32_t>(),
            (std::vector<int32_t>{static_cast<int32_t>(want)}));
  EXPECT_EQ(run_op(Op::ReduceMax, {i32({-3, 7, 7, -9})}, axes({0})).to_vector<int32_t>(), (std::vector<int32_t>{7}));
}

TEST(InterpReduce, ArgmaxArgminFirstExtremeAndNaN) {
  Array x = f64({1, 3, 3, 0, kNaN, 5, kNaN, -1}, {2, 4});
  Array amax1 = run_op(Op::Argmax, {x}, axes({1}));
  EXPECT_EQ(amax1.dtype(), DType::i32);
  EXPECT_EQ(amax1.to_vector<int32_t>(), (std::vector<int32_t>{1, 0}));  // first of the tied 3s; first NaN
  EXPECT_EQ(run_op(Op::Argmin, {x}, axes({1})).to_vector<int32_t>(), (std::vector<int32_t>{3, 0}));
  EXPECT_EQ(run_op(Op::Argmax, {x}, axes({0})).to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 1, 0}));
  EXPECT_EQ(run_op(Op::Argmin, {x}, axes({0})).to_vector<int32_t>(), (std::vector<int32_t>{1, 0, 1, 1}));
  EXPECT_EQ(run_op(Op::Argmin, {i32({4, -2, 9, -2}, {4})}, axes({0})).to_vector<int32_t>(), (std::vector<int32_t>{1}));
}

TEST(InterpLinalg, MatMulHandAndBatched) {
  expect_same(run_op(Op::MatMul, {f64({1, 2, 3, 4}, {2, 2}), f64({5, 6, 7, 8}, {2, 2})}).to_doubles(), {19, 22, 43, 50},
              "2x2");
  EXPECT_EQ(run_op(Op::MatMul, {i32({1, -2, 3}, {1, 3}), i32({4, 5, 6}, {3, 1})}).to_vector<int32_t>(),
            (std::vector<int32_t>{12}));
  // i32 products need up to 62 bits; the result is that of wrapping i32 multiply-adds:
  // INT_MAX^2 = 2^62 - 2^32 + 1 = 1 (mod 2^32), so this is 1 + 1 + 123456789 * -987654321.
  EXPECT_EQ(run_op(Op::MatMul, {i32({INT_MAX, INT_MAX, 123456789}, {1, 3}), i32({INT_MAX, INT_MAX, -987654321}, {3, 1})})
                .to_vector<int32_t>(),
            (std::vector<int32_t>{static_cast<int32_t>(2u + 123456789u * static_cast<uint32_t>(-987654321))}));
  // f32 products are accumulated in double and rounded once.
  EXPECT_EQ(run_op(Op::MatMul, {f32({1e8f, 1.0f, -1e8f}, {1, 3}), f32({1, 1, 1}, {3, 1})}).to_vector<float>(),
            (std::vector<float>{1.0f}));

  const int B = 2, M = 3, K = 4, N = 5;
  std::vector<double> a = pattern(B * M * K, 1), b = pattern(B * K * N, 2);
  Array c = run_op(Op::MatMul, {f64(a, {B, M, K}), f64(b, {B, K, N})});
  EXPECT_EQ(c.shape(), (Shape{B, M, N}));
  std::vector<double> want(B * M * N, 0);
  for (int p = 0; p < B; ++p)
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j)
        for (int q = 0; q < K; ++q) want[(p * M + i) * N + j] += a[(p * M + i) * K + q] * b[(p * K + q) * N + j];
  expect_near(c.to_doubles(), want, 1e-12, "batched matmul");
  // Batch slices are independent: batch 1 of the result is batch 1's product alone.
  EXPECT_NE(want[0], want[M * N]);
}

TEST(InterpConv, HandComputedCases) {
  Array x = f64({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  Array w = f64({1, 2, 3, 4}, {1, 1, 2, 2});
  expect_same(run_op(Op::Conv2d, {x, w}, conv_attrs({1, 1}, {0, 0, 0, 0}, {1, 1})).to_doubles(), {37, 47, 67, 77},
              "plain (cross-correlation, no flip)");
  Array ones = f64({1, 1, 1, 1}, {1, 1, 2, 2});
  Array padded = run_op(Op::Conv2d, {x, ones}, conv_attrs({2, 2}, {1, 1, 1, 1}, {1, 1}));
  EXPECT_EQ(padded.shape(), (Shape{1, 1, 2, 2}));
  expect_same(padded.to_doubles(), {1, 5, 11, 28}, "stride 2, zero padding 1");
  expect_same(run_op(Op::Conv2d, {x, w}, conv_attrs({1, 1}, {0, 0, 0, 0}, {2, 2})).to_doubles(), {64}, "dilation 2");
  // Asymmetric padding: one zero row on top only, two zero columns on the right only.
  Array asym = run_op(Op::Conv2d, {x, ones}, conv_attrs({1, 1}, {1, 0, 0, 2}, {1, 1}));
  EXPECT_EQ(asym.shape(), (Shape{1, 1, 3, 4}));
  expect_same(asym.to_doubles(), {3, 5, 3, 0, 12, 16, 9, 0, 24, 28, 15, 0}, "padding [1,0,0,2]");
  // Groups: output channel o sees only input channel o.
  Array x2 = f64({2, 3}, {1, 2, 1, 1});
  expect_same(run_op(Op::Conv2d, {x2, f64({10, 100}, {2, 1, 1, 1})}, conv_attrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 2))
                  .to_doubles(),
              {20, 300}, "groups=2");
  expect_same(run_op(Op::Conv2d, {x2, f64({10, 100}, {1, 2, 1, 1})}, conv_attrs({1, 1}, {0, 0, 0, 0}, {1, 1}, 1))
                  .to_doubles(),
              {320}, "groups=1 mixes channels");
}

TEST(InterpConv, GeneralCaseMatchesNaiveLoop) {
  const int64_t N = 2, C = 4, H = 7, W = 6, O = 6, G = 2, KH = 3, KW = 2;
  const int64_t sh = 2, sw = 1, top = 1, bottom = 2, left = 0, right = 1, dh = 2, dw = 1;
  const int64_t OH = (H + top + bottom - dh * (KH - 1) - 1) / sh + 1, OW = (W + left + right - dw * (KW - 1) - 1) / sw + 1;
  std::vector<double> x = pattern(N * C * H * W, 3), w = pattern(O * (C / G) * KH * KW, 4);
  Array y = run_op(Op::Conv2d, {f64(x, {N, C, H, W}), f64(w, {O, C / G, KH, KW})},
                   conv_attrs({sh, sw}, {top, bottom, left, right}, {dh, dw}, G));
  ASSERT_EQ(y.shape(), (Shape{N, O, OH, OW}));
  // The input, zero outside [0, H) x [0, W).
  auto at = [&](int64_t n, int64_t c, int64_t h, int64_t ww) {
    return h < 0 || h >= H || ww < 0 || ww >= W ? 0.0 : x[((n * C + c) * H + h) * W + ww];
  };
  std::vector<double> want;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          int64_t g = o / (O / G);
          double s = 0;
          for (int64_t ci = 0; ci < C / G; ++ci)
            for (int64_t p = 0; p < KH; ++p)
              for (int64_t q = 0; q < KW; ++q)
                s += at(n, g * (C / G) + ci, i * sh - top + p * dh, j * sw - left + q * dw) *
                     w[((o * (C / G) + ci) * KH + p) * KW + q];
          want.push_back(s);
        }
  expect_near(y.to_doubles(), want, 1e-12, "conv2d");
}

TEST(InterpConv, GradientOpsAreTheTransposes) {
  // <conv(x, w), g> = <x, input_grad(g, w)> = <w, weight_grad(x, g)>.
  const int64_t N = 2, C = 4, H = 6, W = 5, O = 2, G = 2, KH = 2, KW = 3;
  TensorType xt{DType::f64, {N, C, H, W}}, wt{DType::f64, {O, C / G, KH, KW}};
  ir::Attrs a = conv_attrs({2, 1}, {1, 0, 2, 1}, {1, 2}, G);
  ir::Region r;
  ValueId x = r.add_param(xt), w = r.add_param(wt);
  ValueId y = op(r, Op::Conv2d, {x, w}, a);
  TensorType gt = r.type(y);
  ValueId g = r.add_param(gt);
  ValueId gx = op(r, Op::Conv2dInputGrad, {g, w}, a, {xt});
  ValueId gw = op(r, Op::Conv2dWeightGrad, {x, g}, a, {wt});
  std::vector<double> xv = pattern(xt.numel(), 1), wv = pattern(wt.numel(), 2), gv = pattern(gt.numel(), 3);
  auto out = run(std::move(r), {y, gx, gw}, {f64(xv, xt.shape), f64(wv, wt.shape), f64(gv, gt.shape)});
  double lhs = dot(out[0].to_doubles(), gv);
  EXPECT_NE(lhs, 0);
  EXPECT_NEAR(dot(xv, out[1].to_doubles()), lhs, 1e-9);
  EXPECT_NEAR(dot(wv, out[2].to_doubles()), lhs, 1e-9);
}

TEST(InterpPool, MaxAndAvgWithPadding) {
  std::vector<double> v, neg;
  for (int i = 1; i <= 16; ++i) {
    v.push_back(i);
    neg.push_back(-i);
  }
  ir::Attrs plain = pool_attrs({2, 2}, {2, 2}, {0, 0, 0, 0});
  expect_same(run_op(Op::MaxPool2d, {f64(v, {1, 1, 4, 4})}, plain).to_doubles(), {6, 8, 14, 16}, "max 2x2/2");
  expect_same(run_op(Op::AvgPool2d, {f64(v, {1, 1, 4, 4})}, plain).to_doubles(), {3.5, 5.5, 11.5, 13.5}, "avg 2x2/2");
  ir::Attrs pad = pool_attrs({2, 2}, {2, 2}, {1, 1, 1, 1});
  Array m = run_op(Op::MaxPool2d, {f64(v, {1, 1, 4, 4})}, pad);
  EXPECT_EQ(m.shape(), (Shape{1, 1, 3, 3}));
  expect_same(m.to_doubles(), {1, 3, 4, 9, 11, 12, 13, 15, 16}, "max, padded");
  // Padding is ignored by max (not read as 0): all-negative input keeps negative maxima.
  expect_same(run_op(Op::MaxPool2d, {f64(neg, {1, 1, 4, 4})}, pad).to_doubles(), {-1, -2, -4, -5, -6, -8, -13, -14, -16},
              "max ignores padding");
  // Average counts padding as zeros and divides by kh*kw.
  expect_same(run_op(Op::AvgPool2d, {f64(v, {1, 1, 4, 4})}, pad).to_doubles(),
              {0.25, 1.25, 1, 3.5, 8.5, 5, 3.25, 7.25, 4}, "avg, padded (count_include_pad)");
  // Channels and batch are pooled independently; NaN wins a max window.
  Array two = f64({1, 2, 3, 4, 5, kNaN, 7, 8}, {2, 1, 2, 2});
  expect_same(run_op(Op::MaxPool2d, {two}, pool_attrs({2, 2}, {1, 1}, {0, 0, 0, 0})).to_doubles(), {4, kNaN}, "NaN");
  // f32 average is rounded to float.
  EXPECT_EQ(run_op(Op::AvgPool2d, {f32({0.1f, 0.2f, 0.3f}, {1, 1, 1, 3})}, pool_attrs({1, 3}, {1, 1}, {0, 0, 0, 0}))
                .to_vector<float>()[0],
            static_cast<float>((double{0.1f} + double{0.2f} + double{0.3f}) / 3));
}

TEST(InterpPool, GradientOps) {
  // max_pool2d_grad routes g to the window's first maximum; overlapping windows accumulate.
  ir::Attrs a = pool_attrs({1, 2}, {1, 1}, {0, 0, 0, 0});
  Array x = f64({1, 3, 3, 2}, {1, 1, 1, 4});
  Array g = f64({10, 20, 30}, {1, 1, 1, 3});
  // Windows: (1,3) -> index 1; (3,3) -> index 1 (first of the tie); (3,2) -> index 2.
  expect_same(run_op(Op::MaxPool2dGrad, {x, g}, a).to_doubles(), {0, 30, 30, 0}, "max_pool2d_grad");

  // avg_pool2d_grad is the transpose of avg_pool2d: <avg(x), g> = <x, avg_grad(g)>.
  TensorType xt{DType::f64, {1, 2, 5, 4}};
  ir::Attrs p = pool_attrs({3, 2}, {2, 1}, {1, 2, 0, 1});
  ir::Region r;
  ValueId xv = r.add_param(xt);
  ValueId y = op(r, Op::AvgPool2d, {xv}, p);
  TensorType gt = r.type(y);
  ValueId gv = r.add_param(gt);
  ValueId gx = op(r, Op::AvgPool2dGrad, {gv}, p, {xt});
  std::vector<double> xd = pattern(xt.numel(), 1), gd = pattern(gt.numel(), 2);
  auto out = run(std::move(r), {y, gx}, {f64(xd, xt.shape), f64(gd, gt.shape)});
  double lhs = dot(out[0].to_doubles(), gd);
  EXPECT_NE(lhs, 0);
  EXPECT_NEAR(dot(xd, out[1].to_doubles()), lhs, 1e-12);
}

TEST(InterpReduce, ResultsAreRoundedBeforeTheNextOp) {
  // 1 + 2^-30 is not a float: the f32 sum (and dot product) rounds to 1, so subtracting 1 gives
  // 0. An unrounded double would leave 2^-30; the final conversion to Array would hide that.
  ir::Region r;
  ValueId x = r.add_param({DType::f32, {2}});
  ValueId row = r.add_param({DType::f32, {1, 2}});
  ValueId col = r.add_param({DType::f32, {2, 1}});
  ValueId n = r.add_param({DType::i32, {2}});
  ValueId one = constant(r, {DType::f32, {}}, {1});
  ValueId sum = op(r, Op::Sub, {op(r, Op::ReduceSum, {x}, axes({0})), one});
  ValueId mm = op(r, Op::Sub, {op(r, Op::MatMul, {row, col}), constant(r, {DType::f32, {1, 1}}, {1})});
  // INT_MAX + 1 wraps to INT_MIN before the comparison.
  ValueId negative = op(r, Op::Lt, {op(r, Op::ReduceSum, {n}, axes({0})), constant(r, {DType::i32, {}}, {0})});
  float tiny = 0x1p-30f;
  auto out = run(std::move(r), {sum, mm, negative},
                 {f32({1.0f, tiny}), f32({1.0f, tiny}, {1, 2}), f32({1.0f, 1.0f}, {2, 1}), i32({INT_MAX, 1})});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{0.0f}));
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{0.0f}));
  EXPECT_EQ(out[2].to_vector<bool>(), (std::vector<bool>{true}));
}
