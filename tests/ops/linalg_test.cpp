// matmul (2-D, 1-D promotion on either side, batched with batch broadcasting), dot, conv2d over
// a grid of stride / padding / dilation / groups against a naive 7-loop reference, and both
// pooling ops with padding; convolutions and their gradients as tiled products.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/kernel_listing.h"
#include "common/test_names.h"

namespace {

struct RefResult {
  Shape shape;
  std::vector<double> values;
};

// NumPy matmul: a 1-D left operand is a row, a 1-D right operand a column, and the added
// dimension is removed from the result; batch dimensions broadcast.
RefResult matmul_ref(const std::vector<double>& a, Shape sa, const std::vector<double>& b, Shape sb, DType dt) {
  bool a1 = sa.size() == 1, b1 = sb.size() == 1;
  if (a1) sa.insert(sa.begin(), 1);
  if (b1) sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch = broadcast_shape(ba, bb);
  Shape fa = batch, fb = batch;
  fa.insert(fa.end(), {m, k});
  fb.insert(fb.end(), {k, n});
  std::vector<double> A = broadcast_values(a, sa, fa), B = broadcast_values(b, sb, fb);
  int64_t nb = count(batch);
  std::vector<double> out;
  for (int64_t p = 0; p < nb; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t q = 0; q < k; ++q) {
          acc += A[static_cast<size_t>((p * m + i) * k + q)] * B[static_cast<size_t>((p * k + q) * n + j)];
        }
        out.push_back(round_to(dt, acc));
      }
    }
  }
  Shape os = batch;
  if (!a1) os.push_back(m);
  if (!b1) os.push_back(n);
  return {os, out};
}

struct ConvCase {
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
};

std::string conv_str(const ConvCase& c) {
  return "stride " + fx::shape_str(c.stride) + " padding " + fx::shape_str(c.padding) + " dilation " +
         fx::shape_str(c.dilation) + " groups " + std::to_string(c.groups);
}

std::vector<int64_t> pair_of(const std::vector<int64_t>& v) { return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v; }
std::vector<int64_t> four_of(const std::vector<int64_t>& v) {
  if (v.size() == 1) return {v[0], v[0], v[0], v[0]};
  if (v.size() == 2) return {v[0], v[0], v[1], v[1]};
  return v;
}

// The naive 7-loop cross-correlation (PyTorch conv2d), zero padding.
RefResult conv_ref(const std::vector<double>& x, const Shape& xs, const std::vector<double>& w, const Shape& ws,
                   const ConvCase& c, DType dt) {
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  int64_t O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  std::vector<int64_t> st = pair_of(c.stride), pd = four_of(c.padding), dl = pair_of(c.dilation);
  int64_t OH = (H + pd[0] + pd[1] - dl[0] * (KH - 1) - 1) / st[0] + 1;
  int64_t OW = (W + pd[2] + pd[3] - dl[1] * (KW - 1) - 1) / st[1] + 1;
  int64_t opg = O / c.groups;
  std::vector<double> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = 0;
          int64_t g = o / opg;
          for (int64_t ci = 0; ci < CG; ++ci)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t ih = oh * st[0] - pd[0] + kh * dl[0];
                int64_t iw = ow * st[1] - pd[2] + kw * dl[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                int64_t ch = g * CG + ci;
                acc += x[static_cast<size_t>(((n * C + ch) * H + ih) * W + iw)] *
                       w[static_cast<size_t>(((o * CG + ci) * KH + kh) * KW + kw)];
              }
          out.push_back(round_to(dt, acc));
        }
  return {{N, O, OH, OW}, out};
}

struct PoolCase {
  std::vector<int64_t> window, stride, padding;
};

// Max pooling ignores padding (only in-range elements compete); average pooling divides the sum
// of in-range elements by kh*kw.
RefResult pool_ref(bool is_max, const std::vector<double>& x, const Shape& xs, const PoolCase& c, DType dt) {
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  std::vector<int64_t> win = pair_of(c.window), st = c.stride.empty() ? win : pair_of(c.stride),
                       pd = four_of(c.padding);
  int64_t OH = (H + pd[0] + pd[1] - win[0]) / st[0] + 1;
  int64_t OW = (W + pd[2] + pd[3] - win[1]) / st[1] + 1;
  std::vector<double> out;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = is_max ? -kInf : 0;
          for (int64_t kh = 0; kh < win[0]; ++kh)
            for (int64_t kw = 0; kw < win[1]; ++kw) {
              int64_t ih = oh * st[0] - pd[0] + kh, iw = ow * st[1] - pd[2] + kw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              double v = x[static_cast<size_t>(((n * C + ch) * H + ih) * W + iw)];
              acc = is_max ? std::max(acc, v) : acc + v;
            }
          out.push_back(round_to(dt, is_max ? acc : acc / static_cast<double>(win[0] * win[1])));
        }
  return {{N, C, OH, OW}, out};
}

}  // namespace

class Linalg : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Linalg);

TEST_P(Linalg, MatmulShapesAndPromotion) {
  const std::vector<std::pair<Shape, Shape>> cases{
      {{3, 4}, {4, 5}},       {{4}, {4, 5}},       {{3, 4}, {4}},       {{4}, {4}},
      {{2, 1, 3, 4}, {5, 4, 2}}, {{2, 3, 4}, {4}}, {{4}, {2, 4, 3}},    {{1, 4}, {4, 1}},
      {{2, 3, 4}, {2, 4, 5}}, {{3, 4}, {2, 4, 2}}, {{3, 0}, {0, 2}},    {{0, 4}, {4, 2}},
      {{1, 1}, {1, 1}},       {{2, 1, 2, 3}, {1, 3, 3, 1}},
  };
  uint32_t seed = 40;
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64, fx::i32})) {
    for (const auto& [sa, sb] : cases) {
      SCOPED_TRACE(std::string("matmul ") + fx::dtype_name(dt) + str(sa) + " x " + str(sb));
      std::vector<double> a = random_values(dt, count(sa), -5, 5, seed++);
      std::vector<double> b = random_values(dt, count(sb), -5, 5, seed++);
      auto f = jit([](Tensor x, Tensor y) { return fx::matmul(x, y); });
      RefResult want = matmul_ref(a, sa, b, sb, dt);
      EXPECT_ARRAY(f(make(dt, a, sa), make(dt, b, sb)), dt, want.shape, want.values, Tol::sum(4, 25));
    }
  }
}

TEST_P(Linalg, MatmulByHand) {
  auto f = jit([](Tensor x, Tensor y) { return fx::matmul(x, y); });
  // [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]]
  EXPECT_ARRAY(f(make(fx::f32, {1, 2, 3, 4}, {2, 2}), make(fx::f32, {5, 6, 7, 8}, {2, 2})), fx::f32, {2, 2},
               {19, 22, 43, 50});
  // [1,2] x [[5,6],[7,8]] = [19, 22];  [[5,6],[7,8]] x [1,2] = [17, 23]
  EXPECT_ARRAY(f(make(fx::i32, {1, 2}, {2}), make(fx::i32, {5, 6, 7, 8}, {2, 2})), fx::i32, {2}, {19, 22});
  EXPECT_ARRAY(f(make(fx::i32, {5, 6, 7, 8}, {2, 2}), make(fx::i32, {1, 2}, {2})), fx::i32, {2}, {17, 23});
}

TEST_P(Linalg, Dot) {
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64, fx::i32})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    std::vector<double> a = random_values(dt, 7, -3, 3, 1), b = random_values(dt, 7, -3, 3, 2);
    double acc = 0;
    for (size_t i = 0; i < a.size(); ++i) acc += a[i] * b[i];
    auto f = jit([](Tensor x, Tensor y) { return fx::dot(x, y); });
    EXPECT_ARRAY(f(make(dt, a, {7}), make(dt, b, {7})), dt, {}, {round_to(dt, acc)}, Tol::sum(7, 9));
    EXPECT_ARRAY(f(make(dt, {}, {0}), make(dt, {}, {0})), dt, {}, {0});
  }
  auto f = jit([](Tensor x, Tensor y) { return fx::dot(x, y); });
  EXPECT_ARRAY(f(make(fx::f32, {1, 2, 3}, {3}), make(fx::f32, {4, -5, 6}, {3})), fx::f32, {}, {12});
}

TEST_P(Linalg, Conv2dGrid) {
  const Shape xs{2, 4, 7, 6};
  uint32_t seed = 500;
  int cases = 0;
  for (std::vector<int64_t> stride : {std::vector<int64_t>{1, 1}, {2, 2}, {2, 1}, {3}}) {
    for (std::vector<int64_t> padding :
         {std::vector<int64_t>{0}, {1}, {1, 2}, {0, 1}, {2, 0, 1, 1}, {0, 1, 1, 0}}) {
      for (std::vector<int64_t> dilation : {std::vector<int64_t>{1, 1}, {2, 1}, {2}}) {
        for (int64_t groups : {1, 2, 4}) {
          ConvCase c{stride, padding, dilation, groups};
          SCOPED_TRACE(conv_str(c));
          Shape w_shape{4, 4 / groups, 3, 2};  // [O, C/groups, KH, KW]
          std::vector<double> x = random_values(fx::f32, count(xs), -1, 1, seed++);
          std::vector<double> w = random_values(fx::f32, count(w_shape), -1, 1, seed++);
          fx::Conv2dOptions opt{c.stride, c.padding, c.dilation, c.groups};
          auto f = jit([opt](Tensor a, Tensor b) { return fx::conv2d(a, b, opt); });
          RefResult want = conv_ref(x, xs, w, w_shape, c, fx::f32);
          EXPECT_ARRAY(f(make(fx::f32, x, xs), make(fx::f32, w, w_shape)), fx::f32, want.shape, want.values,
                       Tol::sum(24));
          ++cases;
        }
      }
    }
  }
  EXPECT_EQ(cases, 4 * 6 * 3 * 3);
}

TEST_P(Linalg, Conv2dMoreCases) {
  FLUXION_REQUIRE_F64(backend());
  struct Case {
    Shape xs, ws;
    ConvCase c;
    DType dt;
  };
  std::vector<Case> cases{
      // f64, default options.
      {{1, 3, 5, 5}, {2, 3, 3, 3}, {{1, 1}, {0, 0}, {1, 1}, 1}, fx::f64},
      // 1x1 kernel, stride 2.
      {{2, 3, 4, 5}, {5, 3, 1, 1}, {{2, 2}, {0}, {1}, 1}, fx::f32},
      // Kernel as large as the padded input: 1x1 output.
      {{1, 2, 3, 3}, {1, 2, 5, 5}, {{1, 1}, {1}, {1}, 1}, fx::f64},
      // Groups = 3 with 2 output channels per group, non-square everything.
      {{1, 6, 8, 5}, {6, 2, 2, 3}, {{3, 2}, {1, 0, 2, 1}, {3, 2}, 3}, fx::f32},
      // Batch of 3, O = 1.
      {{3, 2, 4, 4}, {1, 2, 2, 2}, {{1, 1}, {0}, {1, 1}, 1}, fx::f32},
  };
  uint32_t seed = 800;
  for (const Case& k : cases) {
    SCOPED_TRACE(conv_str(k.c) + " x" + str(k.xs) + " w" + str(k.ws));
    std::vector<double> x = random_values(k.dt, count(k.xs), -1, 1, seed++);
    std::vector<double> w = random_values(k.dt, count(k.ws), -1, 1, seed++);
    fx::Conv2dOptions opt{k.c.stride, k.c.padding, k.c.dilation, k.c.groups};
    auto f = jit([opt](Tensor a, Tensor b) { return fx::conv2d(a, b, opt); });
    RefResult want = conv_ref(x, k.xs, w, k.ws, k.c, k.dt);
    EXPECT_ARRAY(f(make(k.dt, x, k.xs), make(k.dt, w, k.ws)), k.dt, want.shape, want.values, Tol::sum(50));
  }
  // By hand: a 3x3 input of 1..9, a 2x2 kernel [[1,0],[0,-1]]: out[i][j] = x[i][j] - x[i+1][j+1] = -4.
  auto f = jit([](Tensor a, Tensor b) { return fx::conv2d(a, b); });
  EXPECT_ARRAY(f(make(fx::f32, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3}), make(fx::f32, {1, 0, 0, -1}, {1, 1, 2, 2})),
               fx::f32, {1, 1, 2, 2}, {-4, -4, -4, -4});
  // Cross-correlation, not convolution: kernel [[1,2]] on [[1,10,100]] gives [21, 210].
  EXPECT_ARRAY(f(make(fx::f32, {1, 10, 100}, {1, 1, 1, 3}), make(fx::f32, {1, 2}, {1, 1, 1, 2})), fx::f32,
               {1, 1, 1, 2}, {21, 210});
}

// Convolutions wide enough that every backend runs them, and both their gradients, as tiled
// matrix products over im2col (the per-element form is Conv2dGrid's), strided, dilated and
// unevenly padded, against the interpreter's plain loops.
TEST_P(Linalg, Conv2dAndGradientsAsTiledProducts) {
  if (backend() == fx::Backend::Interp) GTEST_SKIP() << "the interpreter is the reference";
  const Shape xs{2, 64, 40, 32}, ws{16, 64, 3, 3};
  uint32_t seed = 900;
  for (const fx::Conv2dOptions& opt :
       {fx::Conv2dOptions{{2, 2}, {1}, {1, 1}, 1}, fx::Conv2dOptions{{2, 1}, {2, 0, 1, 1}, {2, 1}, 1},
        fx::Conv2dOptions{{2}, {3}, {2}, 1}}) {
    SCOPED_TRACE("stride " + str(opt.stride) + " padding " + str(opt.padding) + " dilation " + str(opt.dilation));
    // The sum of the convolution weighted by r: its gradients are the two convolution gradients of r.
    auto f = [opt](Tensor x, Tensor w, Tensor r) { return fx::sum(fx::conv2d(x, w, opt) * r); };
    Array x = make(fx::f32, random_values(fx::f32, count(xs), -1, 1, seed++), xs);
    Array w = make(fx::f32, random_values(fx::f32, count(ws), -1, 1, seed++), ws);
    Shape ys = run(
                   fx::Backend::Interp, [opt](Tensor a, Tensor b) { return fx::conv2d(a, b, opt); }, x, w)
                   .shape();
    Array r = make(fx::f32, random_values(fx::f32, count(ys), -1, 1, seed++), ys);
    auto compiled = fx::jit(fx::value_and_grad(f, {0, 1}), backend());
    std::string listing = compiled.lower(x, w, r).kernels();
    std::vector<std::string> strategies = fx::testing::kernel_strategies(listing);
    const char* tiled = backend() == fx::Backend::Vulkan ? "matmul[tiles]" : "matmul[im2col]";
    EXPECT_EQ(std::count(strategies.begin(), strategies.end(), tiled), 3) << listing;
    auto [value, grads] = compiled(x, w, r);
    auto [want_value, want_grads] = run(fx::Backend::Interp, fx::value_and_grad(f, {0, 1}), x, w, r);
    EXPECT_ARRAY(value, fx::f32, {}, want_value.to_doubles(), Tol::sum(count(ys) * 576));
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_ARRAY(grads[i], fx::f32, want_grads[i].shape(), want_grads[i].to_doubles(), Tol::sum(600));
    }
  }
}

TEST_P(Linalg, PoolingWithPadding) {
  const Shape xs{2, 3, 7, 6};
  std::vector<PoolCase> cases{
      {{2, 2}, {}, {0, 0}},        {{3, 3}, {2, 2}, {1}},    {{2, 3}, {1, 2}, {1, 0}}, {{3, 2}, {2, 1}, {0, 1, 1, 0}},
      {{3}, {1}, {1, 1}},          {{2}, {}, {1}},           {{1, 1}, {}, {0}},        {{7, 6}, {}, {0}},
  };
  uint32_t seed = 600;
  for (const PoolCase& c : cases) {
    for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
      for (bool is_max : {true, false}) {
        SCOPED_TRACE(std::string(is_max ? "max_pool2d " : "avg_pool2d ") + fx::dtype_name(dt) + " window " +
                     str(c.window) + " stride " + str(c.stride) + " padding " + str(c.padding));
        std::vector<double> x = random_values(dt, count(xs), -2, 2, seed++);
        fx::Pool2dOptions opt{c.window, c.stride, c.padding};
        auto f = jit([opt, is_max](Tensor a) { return is_max ? fx::max_pool2d(a, opt) : fx::avg_pool2d(a, opt); });
        RefResult want = pool_ref(is_max, x, xs, c, dt);
        EXPECT_ARRAY(f(make(dt, x, xs)), dt, want.shape, want.values, Tol::sum(42, 2));
      }
    }
  }
}

TEST_P(Linalg, MaxPoolingKeepsTheFirstOfEqualValues) {
  // -0 == +0: the first in the window is the maximum, so its sign survives; a NaN wins.
  auto f = jit([](Tensor a) { return fx::max_pool2d(a, {.window = {1, 2}}); });
  Array y = f(make(fx::f32, {-0.0, 0.0, 0.0, -0.0, 1.0, kNaN}, {1, 1, 1, 6}));
  std::vector<float> v = y.to_vector<float>();
  ASSERT_EQ(v.size(), 3u);
  EXPECT_TRUE(v[0] == 0 && std::signbit(v[0]));
  EXPECT_TRUE(v[1] == 0 && !std::signbit(v[1]));
  EXPECT_TRUE(std::isnan(v[2]));
}

TEST_P(Linalg, MaxPoolingGradientGoesToTheFirstMaximumOfEachTilingWindow) {
  FLUXION_REQUIRE_F64(backend());
  // Windows that tile the input exactly (the CPU then runs the gradient window by window):
  // ties, -0 against +0 and NaNs decide as in the forward pass; the gradient is a select, so it
  // is exact. Widths of 1, 2 and more vectors of windows, window 2x2 and 3x2, f32 and f64, and
  // the relu and bias-gradient epilogue of a LeNet layer after it.
  uint32_t seed = 900;
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
    for (std::vector<int64_t> window : {std::vector<int64_t>{2, 2}, {3, 2}}) {
      for (int64_t cols : {1, 12, 40}) {
        Shape xs{2, 3, 2 * window[0], cols * window[1]};
        SCOPED_TRACE(std::string(fx::dtype_name(dt)) + " window " + str(Shape(window)) + " x" + str(xs));
        // Few distinct values, so that windows hold ties; some -0, +0 and NaN.
        std::vector<double> x = random_ints(count(xs), -2, 2, seed++);
        for (size_t i = 0; i < x.size(); i += 7) x[i] = (i % 3 == 0) ? -0.0 : 0.0;
        for (size_t i = 5; i < x.size(); i += 53) x[i] = kNaN;
        std::vector<double> g = random_doubles(count(xs) / (window[0] * window[1]), -1, 1, seed++);
        Array xa = make(dt, x, xs), ga = make(dt, g, {2, 3, 2, cols});
        auto f = [window](Tensor x, Tensor g) {
          Tensor dx = fx::vjp([window](Tensor x) { return fx::max_pool2d(x, {.window = window}); })(x).second(g)[0];
          Tensor masked = fx::where(x > 0, dx, 0.0);
          return std::make_pair(masked, fx::sum(masked, {0, 2, 3}));
        };
        auto [got, got_sum] = jit(f)(xa, ga);
        auto [want, want_sum] = fx::jit(f, fx::Backend::Interp)(xa, ga);
        EXPECT_ARRAY(got, dt, xs, want.to_doubles());
        EXPECT_ARRAY(got_sum, dt, {3}, want_sum.to_doubles(), Tol::sum(count(xs)));
        // Alone (no reduction over the images), split across two threads.
        int before = fx::num_threads();
        fx::set_num_threads(2);
        auto alone = [window](Tensor x, Tensor g) {
          return fx::vjp([window](Tensor x) { return fx::max_pool2d(x, {.window = window}); })(x).second(g)[0];
        };
        Array split = jit(alone)(xa, ga);
        fx::set_num_threads(before);
        EXPECT_ARRAY(split, dt, xs, fx::jit(alone, fx::Backend::Interp)(xa, ga).to_doubles());
      }
    }
  }
}

TEST_P(Linalg, ConvolutionOverNoChannelsIsZeroPlusItsEpilogue) {
  // An empty sum, padded, with a bias after it: the bias alone.
  auto f = jit([](Tensor x, Tensor w, Tensor b) {
    return fx::conv2d(x, w, {.padding = {1, 1}}) + fx::reshape(b, {1, 2, 1, 1});
  });
  Array y = f(Array(fx::f32, {1, 0, 4, 4}), Array(fx::f32, {2, 0, 3, 3}), make(fx::f32, {1.5, -2}, {2}));
  std::vector<double> want(32, 1.5);
  std::fill(want.begin() + 16, want.end(), -2.0);
  EXPECT_ARRAY(y, fx::f32, {1, 2, 4, 4}, want);
}

TEST_P(Linalg, PoolingPaddingByHand) {
  FLUXION_REQUIRE_F64(backend());
  // All-negative input: max pooling must not see the zero padding; average pooling counts it.
  // x = [[-1,-2],[-3,-4]], window 2, stride 1, padding 1 -> 3x3 output.
  Array x = make(fx::f32, {-1, -2, -3, -4}, {1, 1, 2, 2});
  fx::Pool2dOptions opt{{2, 2}, {1, 1}, {1, 1}};
  auto mx = jit([opt](Tensor a) { return fx::max_pool2d(a, opt); });
  auto av = jit([opt](Tensor a) { return fx::avg_pool2d(a, opt); });
  EXPECT_ARRAY(mx(x), fx::f32, {1, 1, 3, 3}, {-1, -1, -2, -1, -1, -2, -3, -3, -4});
  EXPECT_ARRAY(av(x), fx::f32, {1, 1, 3, 3},
               {-0.25, -0.75, -0.5, -1.0, -2.5, -1.5, -0.75, -1.75, -1.0});
  // Default options: 2x2 window, stride 2, floor of odd sizes.
  auto mx2 = jit([](Tensor a) { return fx::max_pool2d(a); });
  auto av2 = jit([](Tensor a) { return fx::avg_pool2d(a); });
  Array y = make(fx::f64, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {1, 1, 3, 5});
  EXPECT_ARRAY(mx2(y), fx::f64, {1, 1, 1, 2}, {7, 9});
  EXPECT_ARRAY(av2(y), fx::f64, {1, 1, 1, 2}, {4, 6});
}
