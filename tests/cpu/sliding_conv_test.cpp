// Stride-1 convolutions, which the CPU runs as sliding windows over a staged image
// (backends/cpu/sliding_conv.cpp), against the interpreter: the forward pass with its epilogue,
// the input gradient and the weight gradient, in f32 and f64, on one thread and split across
// two (the weight gradient's rows then end in a partial block), at LeNet's shapes, with
// padding, and with channels too many for the stack buffers (the im2col form instead).
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/test_util.h"
#include "cpu/strategies.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;

namespace {

struct Case {
  fx::Shape x, w;
  std::vector<int64_t> padding;
  int im2col = 0;  // how many of the gradient program's three convolutions are too large to stage
};

// The strategies of the matmul kernels (the convolutions) in the listing.
std::vector<std::string> convolution_strategies(const std::string& listing) {
  std::vector<std::string> out;
  for (const std::string& k : fx::testing::kernel_strategies(listing)) {
    if (k.rfind("matmul[", 0) == 0) out.push_back(k);
  }
  return out;
}

class ThreadCount {
 public:
  explicit ThreadCount(int n) : before_(fx::num_threads()) { fx::set_num_threads(n); }
  ~ThreadCount() { fx::set_num_threads(before_); }

 private:
  int before_;
};

}  // namespace

TEST(CpuSlidingConv, ValueAndGradientsMatchTheInterpreter) {
  const Case cases[] = {
      {{4, 1, 28, 28}, {6, 1, 5, 5}, {0}},   // LeNet's first layer
      {{3, 6, 12, 12}, {16, 6, 5, 5}, {0}},  // its second
      {{3, 3, 9, 10}, {8, 3, 3, 3}, {1}},    // "same" padding, 8-row tiles
      {{2, 4, 7, 6}, {5, 4, 3, 2}, {2, 0, 1, 1}},
      {{1, 2, 4, 5}, {7, 2, 2, 3}, {3, 1, 0, 2}},  // padding beyond the kernel's reach
      {{1, 96, 20, 20}, {4, 96, 3, 3}, {1}, 3},    // 96 channels: too large for the stack, im2col
  };
  uint32_t seed = 1;
  for (int threads : {1, 2}) {
    ThreadCount scope(threads);
    for (fx::DType t : {fx::f32, fx::f64}) {
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(fx::dtype_name(t)) + " x" + fx::testing::str(c.x) + " w" + fx::testing::str(c.w) +
                     " threads " + std::to_string(threads));
        Array x = fx::testing::make(t, fx::testing::random_doubles(fx::numel(c.x), -1, 1, seed++), c.x);
        Array w = fx::testing::make(t, fx::testing::random_doubles(fx::numel(c.w), -1, 1, seed++), c.w);
        Array b = fx::testing::make(t, fx::testing::random_doubles(c.w[0], -1, 1, seed++), {c.w[0]});
        std::vector<int64_t> padding = c.padding;
        auto f = [padding](Tensor x, Tensor w, Tensor b) {
          Tensor y = fx::relu(fx::conv2d(x, w, {.padding = padding}) + fx::reshape(b, {1, b.numel(), 1, 1}));
          return fx::sum(y * fx::sin(y));
        };
        auto g = fx::value_and_grad(f, {0, 1, 2});
        auto compiled = fx::jit(g, fx::Backend::Cpu);
        std::vector<std::string> convs = convolution_strategies(compiled.lower(x, w, b).kernels());
        ASSERT_EQ(convs.size(), 3u) << compiled.lower(x, w, b).kernels();
        // Sliding windows need vectors of at least 4 lanes (every AVX machine's).
        int im2col = fx::testing::matmul_lanes(t) >= 4 ? c.im2col : 3;
        EXPECT_EQ(std::count(convs.begin(), convs.end(), "matmul[im2col]"), im2col)
            << compiled.lower(x, w, b).kernels();
        EXPECT_EQ(std::count(convs.begin(), convs.end(), "matmul[sliding]"), 3 - im2col)
            << compiled.lower(x, w, b).kernels();
        auto [value, grads] = compiled(x, w, b);
        auto [want_value, want_grads] = fx::jit(g, fx::Backend::Interp)(x, w, b);
        // Every value is a sum of at most this many products.
        double terms = static_cast<double>(std::max({c.x[0] * c.x[2] * c.x[3], c.w[1] * c.w[2] * c.w[3], c.w[0] * c.w[2] * c.w[3]}));
        double u = (t == fx::f32 ? 0x1p-24 : 0x1p-53) * 8 * terms;
        // The loss adds up every output: its own terms on top of each output's.
        std::vector<int64_t> pad = padding.size() == 1 ? std::vector<int64_t>(4, padding[0])
                                   : padding.size() == 2
                                       ? std::vector<int64_t>{padding[0], padding[0], padding[1], padding[1]}
                                       : padding;
        double outputs = static_cast<double>(c.x[0] * c.w[0] * (c.x[2] + pad[0] + pad[1] - c.w[2] + 1) *
                                             (c.x[3] + pad[2] + pad[3] - c.w[3] + 1));
        double eps = t == fx::f32 ? 0x1p-24 : 0x1p-53;
        EXPECT_NEAR(value.item(), want_value.item(), 4 * eps * (terms + outputs) * (1 + std::abs(want_value.item())));
        ASSERT_EQ(grads.size(), 3u);
        for (size_t i = 0; i < 3; ++i) {
          std::vector<double> got = grads[i].to_doubles(), want = want_grads[i].to_doubles();
          ASSERT_EQ(got.size(), want.size());
          double scale = 0;
          for (double v : want) scale = std::max(scale, std::abs(v));
          for (size_t j = 0; j < got.size(); ++j) ASSERT_NEAR(got[j], want[j], u * (1 + scale)) << "gradient " << i << " element " << j;
        }
      }
    }
  }
}

TEST(CpuSlidingConv, ForwardMatchesTheInterpreterElementByElement) {
  // Outputs wider than the register tile's two vectors, shorter than one, and a single column.
  const Case cases[] = {
      {{2, 1, 6, 40}, {6, 1, 3, 5}, {0}},
      {{2, 3, 9, 3}, {9, 3, 2, 2}, {0, 0, 1, 1}},
      {{1, 2, 5, 1}, {4, 2, 3, 1}, {1, 1, 0, 0}},
  };
  uint32_t seed = 100;
  for (fx::DType t : {fx::f32, fx::f64}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(fx::dtype_name(t)) + " x" + fx::testing::str(c.x) + " w" + fx::testing::str(c.w));
      Array x = fx::testing::make(t, fx::testing::random_doubles(fx::numel(c.x), -1, 1, seed++), c.x);
      Array w = fx::testing::make(t, fx::testing::random_doubles(fx::numel(c.w), -1, 1, seed++), c.w);
      std::vector<int64_t> padding = c.padding;
      auto f = [padding](Tensor x, Tensor w) { return fx::conv2d(x, w, {.padding = padding}); };
      auto compiled = fx::jit(f, fx::Backend::Cpu);
      EXPECT_EQ(convolution_strategies(compiled.lower(x, w).kernels()), std::vector<std::string>{"matmul[sliding]"});
      std::vector<double> got = compiled(x, w).to_doubles();
      std::vector<double> want = fx::jit(f, fx::Backend::Interp)(x, w).to_doubles();
      ASSERT_EQ(got.size(), want.size());
      double u = (t == fx::f32 ? 0x1p-24 : 0x1p-53) * 4 * static_cast<double>(c.w[1] * c.w[2] * c.w[3]);
      for (size_t j = 0; j < got.size(); ++j) ASSERT_NEAR(got[j], want[j], u * (1 + std::abs(want[j]))) << "element " << j;
    }
  }
}

TEST(CpuSlidingConv, AnInfinityOutsideATapsWindowLeavesItsWeightGradientFinite) {
  // x's last column is read only by the kernel's last tap; the weight gradient's wide columns
  // also pass over it for the other taps, where the output gradient is zero (0 * inf = NaN).
  for (fx::DType t : {fx::f32, fx::f64}) {
    SCOPED_TRACE(fx::dtype_name(t));
    std::vector<double> xs = fx::testing::random_doubles(2 * 3 * 6, -1, 1, 7);
    xs[5] = std::numeric_limits<double>::infinity();  // image 0, row 0, column 5
    xs[3 * 6 + 5] = std::numeric_limits<double>::quiet_NaN();
    Array x = fx::testing::make(t, xs, {2, 1, 3, 6});
    Array w = fx::testing::make(t, fx::testing::random_doubles(3, -1, 1, 8), {1, 1, 1, 3});
    auto dw = [](Tensor x, Tensor w) {
      return fx::grad([](Tensor w, Tensor x) { return fx::sum(fx::conv2d(x, w) * 1.5); })(w, x);
    };
    std::vector<double> got = fx::jit(dw, fx::Backend::Cpu)(x, w)[0].to_doubles();
    std::vector<double> want = fx::jit(dw, fx::Backend::Interp)(x, w)[0].to_doubles();
    ASSERT_EQ(got.size(), 3u);
    ASSERT_TRUE(std::isfinite(want[0]) && std::isfinite(want[1]) && !std::isfinite(want[2]));
    for (size_t j = 0; j < 2; ++j) EXPECT_NEAR(got[j], want[j], 1e-5 * (1 + std::abs(want[j]))) << "tap " << j;
    EXPECT_TRUE(std::isnan(got[2])) << got[2];
  }
}

TEST(CpuSlidingConv, PerImageEpilogueReductionsAndNoImages) {
  // A reduction over each image's outputs keeps the images, so the forward kernel stays split
  // across threads with it; and a weight gradient over no images is zero.
  ThreadCount two(2);
  Array x = fx::testing::make(fx::f32, fx::testing::random_doubles(64 * 2 * 12 * 12, -1, 1, 21), {64, 2, 12, 12});
  Array w = fx::testing::make(fx::f32, fx::testing::random_doubles(8 * 2 * 5 * 5, -1, 1, 22), {8, 2, 5, 5});
  auto per_image = [](Tensor x, Tensor w) { return fx::sum(fx::relu(fx::conv2d(x, w, {.padding = {2}})), {1, 2, 3}); };
  std::vector<double> got = fx::jit(per_image, fx::Backend::Cpu)(x, w).to_doubles();
  std::vector<double> want = fx::jit(per_image, fx::Backend::Interp)(x, w).to_doubles();
  ASSERT_EQ(got.size(), 64u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << "image " << i;

  auto dw = [](Tensor x, Tensor w) {
    return fx::grad([](Tensor w, Tensor x) { return fx::sum(fx::conv2d(x, w)); })(w, x)[0];
  };
  Array none(fx::f32, {0, 2, 12, 12});
  std::vector<double> zero = fx::jit(dw, fx::Backend::Cpu)(none, w).to_doubles();
  ASSERT_EQ(zero.size(), 400u);
  for (double v : zero) EXPECT_EQ(v, 0.0);
}
