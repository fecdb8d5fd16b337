// Kernels on many threads. A kernel whose reductions fold its outermost dimension runs as a
// fixed number of parts with partial results combined in order, so its results are the same
// bits at every thread count and agree with the interpreter's within rounding; so do kernels
// that run side by side.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "common/test_util.h"
#include "cpu/lstm_cell.h"
#include "cpu/strategies.h"
#include "ir/ir.h"
#include "kernel/kernel_ir.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;
using namespace fluxion::testing;

namespace {

Array random(const fx::Shape& s, uint32_t seed, double scale = 1) {
  return make(fx::f32, random_doubles(count(s), -scale, scale, seed), s);
}

// Calls `f` at 1, 2, 3 and 8 threads (more than the machine may have: the parts, not the
// cores, decide the result) and expects the same bits each time; returns the first results.
std::vector<std::vector<double>> same_at_every_thread_count(const std::function<std::vector<Array>()>& f) {
  int before = fx::num_threads();
  std::vector<std::vector<double>> first;
  for (int threads : {1, 2, 3, 8}) {
    fx::set_num_threads(threads);
    std::vector<std::vector<double>> got;
    for (const Array& a : f()) got.push_back(a.to_doubles());
    if (first.empty()) {
      first = got;
    } else {
      EXPECT_EQ(got, first) << "at " << threads << " threads";
    }
  }
  fx::set_num_threads(before);
  return first;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * (1 + std::abs(want[i]))) << "element " << i;
  }
}

// Compiles f(args...), a pair of results, for the CPU and expects its kernel listing to match
// `listing`, its results the same bits at every thread count and the interpreter's within `rel`.
template <class F, class... Args>
void expect_pair(F f, const std::string& listing, double rel, const Args&... args) {
  auto cpu = fx::jit(f, fx::Backend::Cpu);
  std::string kernels = cpu.lower(args...).kernels();
  EXPECT_TRUE(std::regex_search(kernels, std::regex(listing))) << kernels;
  auto got = same_at_every_thread_count([&] {
    auto [a, b] = cpu(args...);
    return std::vector<Array>{a, b};
  });
  auto [a, b] = fx::jit(f, fx::Backend::Interp)(args...);
  expect_near_all(got[0], a.to_doubles(), rel);
  expect_near_all(got[1], b.to_doubles(), rel);
}

TEST(SplitReductions, ColumnSumsMaxAndMinAreSplitAndTheSameAtEveryThreadCount) {
  auto f = [](Tensor x) { return std::make_tuple(fx::sum(x, {0}), fx::max(x, {0}), fx::min(x * 2.0, {0})); };
  Array x = random({4096, 48}, 1);
  auto cpu = fx::jit(f, fx::Backend::Cpu);
  std::string kernels = cpu.lower(x).kernels();
  EXPECT_NE(kernels.find(" split "), std::string::npos) << kernels;
  auto got = same_at_every_thread_count([&] {
    auto [s, mx, mn] = cpu(x);
    return std::vector<Array>{s, mx, mn};
  });
  auto [s, mx, mn] = fx::jit(f, fx::Backend::Interp)(x);
  expect_near_all(got[0], s.to_doubles(), 1e-4);
  EXPECT_EQ(got[1], mx.to_doubles());
  EXPECT_EQ(got[2], mn.to_doubles());
}

// W5's loss, sum(exp(w x + b)), and its gradient for w and b: the kernels of the gradient's
// listing, after the same bits at every thread count and the interpreter's values are checked.
std::string w5_gradient_checked(const Array& w, const Array& b, const Array& x) {
  auto loss = [](Tensor w, Tensor b, Tensor x) { return fx::sum(fx::exp(fx::matmul(w, x) + b)); };
  auto primal = fx::jit(loss, fx::Backend::Cpu);
  auto value = same_at_every_thread_count([&] { return std::vector<Array>{primal(w, b, x)}; });
  expect_near_all(value[0], fx::jit(loss, fx::Backend::Interp)(w, b, x).to_doubles(), 1e-5);
  auto grad = fx::jit(fx::value_and_grad(loss, {0, 1}), fx::Backend::Cpu);
  auto grads = same_at_every_thread_count([&] {
    auto [v, g] = grad(w, b, x);
    return std::vector<Array>{v, g[0], g[1]};
  });
  auto [v, g] = fx::jit(fx::value_and_grad(loss, {0, 1}), fx::Backend::Interp)(w, b, x);
  expect_near_all(grads[0], v.to_doubles(), 1e-5);
  expect_near_all(grads[1], g[0].to_doubles(), 1e-4);
  expect_near_all(grads[2], g[1].to_doubles(), 1e-4);
  return grad.lower(w, b, x).kernels();
}

// A product as tall as it is wide whose epilogue ends in a full reduction: split over its rows.
TEST(SplitReductions, AProductEndingInAFullSumIsSplitWithItsGradient) {
  Array w = random({512, 128}, 2, 0.05), b = random({512, 1}, 3, 0.05), x = random({128, 512}, 4, 0.05);
  std::string kernels = w5_gradient_checked(w, b, x);
  EXPECT_TRUE(std::regex_search(kernels, std::regex("\\[512,512\\] split 4: matmul add exp"))) << kernels;
}

// A product few rows tall and many columns wide, whose reductions all fold its columns (the loss
// and the bias gradient): its parts are shares of the columns, each packing only its own
// panels; the last part ends in a panel narrower than the others, over two k-blocks.
TEST(SplitReductions, AWideProductEndingInRowAndFullSumsIsSplitOverItsColumns) {
  Array w = random({40, 300}, 7, 0.05), b = random({40, 1}, 8, 0.05), x = random({300, 1000}, 9, 0.05);
  std::string kernels = w5_gradient_checked(w, b, x);
  EXPECT_TRUE(std::regex_search(kernels, std::regex("\\[40,1000\\] split 7 columns: matmul add exp"))) << kernels;
}

// A convolution's weight gradient alone in its kernel sums over every image: its parts take
// shares of the images (at least 2048 output pixels each), each summing into a partial
// gradient, as sliding windows (LeNet's first layer) and as im2col (256 channels are too many
// for the stack buffers), in f32 and f64. Where that gives no more parts than output channels
// (LeNet's second layer, 8 x 8 pixels an image), threads share the channels.
TEST(SplitReductions, AWeightGradientIsSplitOverItsImages) {
  struct Case {
    fx::Shape x, w;
    const char* listing;
    int64_t stride = 1;
  };
  const Case cases[] = {
      {{64, 1, 28, 28}, {6, 1, 5, 5}, "matmul\\[sliding\\] \\[6,1,5,5\\] split 16 images: conv2d_weight_grad"},
      {{40, 6, 12, 12}, {16, 6, 5, 5}, "matmul\\[sliding\\] \\[16,6,5,5\\] parallel: conv2d_weight_grad"},
      {{8, 256, 24, 24}, {1, 256, 3, 3}, "matmul\\[im2col\\] \\[1,256,3,3\\] split 2 images: conv2d_weight_grad"},
      // A product narrower than a vector (4 taps) of one register tile of rows (2 channels): the
      // parts' k-block ranges hold for it too.
      {{128, 1, 64, 64}, {2, 1, 2, 2}, "matmul\\[im2col\\] \\[2,1,2,2\\] split [0-9]+ images: conv2d_weight_grad", 2},
  };
  uint32_t seed = 20;
  for (fx::DType t : {fx::f32, fx::f64}) {
    // Sliding windows need vectors of at least 4 lanes (every AVX machine's).
    bool slides = fx::testing::matmul_lanes(t) >= 4;
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(fx::dtype_name(t)) + " x" + fx::testing::str(c.x));
      Array x = fx::testing::make(t, fx::testing::random_doubles(fx::numel(c.x), -1, 1, seed++), c.x);
      Array w = fx::testing::make(t, fx::testing::random_doubles(fx::numel(c.w), -1, 1, seed++), c.w);
      auto loss = [stride = c.stride](Tensor x, Tensor w) {
        Tensor y = fx::conv2d(x, w, {.stride = {stride, stride}, .padding = {1}});
        return fx::sum(y * y);
      };
      auto grad = fx::jit(fx::grad(loss, {1}), fx::Backend::Cpu);
      std::string kernels = grad.lower(x, w).kernels();
      std::string listing = slides ? c.listing : std::regex_replace(c.listing, std::regex("sliding"), "im2col");
      EXPECT_TRUE(std::regex_search(kernels, std::regex(listing))) << kernels;
      auto got = same_at_every_thread_count([&] { return std::vector<Array>{grad(x, w)[0]}; });
      std::vector<double> want = fx::jit(fx::grad(loss, {1}), fx::Backend::Interp)(x, w)[0].to_doubles();
      // Each element sums images x pixels products of g = 2 y, itself a sum over channels x taps
      // (output pixels with padding 1 on each side).
      auto out = [&](size_t d) { return (c.x[d] + 2 - c.w[d]) / c.stride + 1; };
      double pixels = static_cast<double>(out(2) * out(3));
      double terms = static_cast<double>(c.x[0]) * pixels + static_cast<double>(c.w[1] * c.w[2] * c.w[3]);
      double scale = 0;
      for (double v : want) scale = std::max(scale, std::abs(v));
      double tolerance = (t == fx::f32 ? 0x1p-24 : 0x1p-53) * 8 * terms * (1 + scale);
      ASSERT_EQ(got[0].size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[0][i], want[i], tolerance) << "element " << i;
    }
  }
}

// A product alone whose result is too small to give every one of 16 threads a share (a tile of
// rows or a panel of columns) but whose depth is long is split over its depth: each part sums
// whole k-blocks of its range into a partial product (the last range ending in a short block),
// and the parts are summed in order. As register tiles and as dot products (3 columns), in f32
// and f64, and of bf16 operands with an odd depth. A product with more after it in its kernel
// (a bias) is not.
TEST(SplitReductions, ALongProductWithASmallResultIsSplitOverItsDepth) {
  struct Case {
    fx::Shape a, b;
    const char* listing;
  };
  const Case cases[] = {
      {{40, 12000}, {12000, 24}, "\\[40,24\\] split 11 depth: matmul \\|"},
      {{6, 131072}, {131072, 3}, "\\[6,3\\] split 9 depth: matmul \\|"},
  };
  uint32_t seed = 40;
  for (fx::DType t : {fx::f32, fx::f64}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(fx::dtype_name(t)) + " a" + fx::testing::str(c.a));
      Array a = fx::testing::make(t, fx::testing::random_doubles(fx::numel(c.a), -1, 1, seed++), c.a);
      Array b = fx::testing::make(t, fx::testing::random_doubles(fx::numel(c.b), -1, 1, seed++), c.b);
      auto product = [](Tensor a, Tensor b) { return fx::matmul(a, b); };
      auto cpu = fx::jit(product, fx::Backend::Cpu);
      std::string kernels = cpu.lower(a, b).kernels();
      EXPECT_TRUE(std::regex_search(kernels, std::regex(c.listing))) << kernels;
      auto got = same_at_every_thread_count([&] { return std::vector<Array>{cpu(a, b)}; });
      std::vector<double> want = fx::jit(product, fx::Backend::Interp)(a, b).to_doubles();
      double depth = static_cast<double>(c.a[1]);
      double tolerance = (t == fx::f32 ? 0x1p-24 : 0x1p-53) * 8 * depth;
      expect_near_all(got[0], want, tolerance);
    }
  }
  // bf16 operands summed in f32: the parts are bf16 pairs' tiles where the CPU has AVX-512-BF16
  // (each part's range starting on a whole k-block, so on a pair), the same at every thread count.
  auto widened = [](Tensor a, Tensor b) { return fx::matmul(fx::cast(a, fx::f32), fx::cast(b, fx::f32)); };
  Array ah = fx::testing::make(fx::bf16, fx::testing::random_doubles(40 * 12001, -1, 1, 52), {40, 12001});
  Array bh = fx::testing::make(fx::bf16, fx::testing::random_doubles(12001 * 24, -1, 1, 53), {12001, 24});
  auto cpu = fx::jit(widened, fx::Backend::Cpu);
  std::string split = cpu.lower(ah, bh).kernels();
  EXPECT_TRUE(std::regex_search(split, std::regex("\\[40,24\\] split [0-9]+ depth: matmul \\|"))) << split;
  EXPECT_EQ(split.find("bf16-tiles") != std::string::npos, fx::testing::bf16_products()) << split;
  auto got = same_at_every_thread_count([&] { return std::vector<Array>{cpu(ah, bh)}; });
  expect_near_all(got[0], fx::jit(widened, fx::Backend::Interp)(ah, bh).to_doubles(), 0x1p-24 * 8 * 12001);
  auto biased = [](Tensor a, Tensor b) { return fx::matmul(a, b) + 1.0; };
  Array a = random({40, 12000}, 50), b = random({12000, 24}, 51);
  std::string kernels = fx::jit(biased, fx::Backend::Cpu).lower(a, b).kernels();
  EXPECT_EQ(kernels.find("depth"), std::string::npos) << kernels;
}

// A column sum keeps the columns, which parts of columns would each write only in part: such a
// product is split over its rows.
TEST(SplitReductions, AProductWithColumnSumsIsSplitOverItsRows) {
  auto f = [](Tensor w, Tensor x) {
    Tensor y = fx::matmul(w, x);
    return std::make_tuple(fx::sum(y, {0}), fx::sum(y));
  };
  Array w = random({256, 64}, 10, 0.1), x = random({64, 1024}, 11, 0.1);
  expect_pair(f, "\\[256,1024\\] split 2: matmul", 1e-4, w, x);
}

// Reductions over several axes in one kernel: the one that keeps dimension 0 is written by the
// part that owns each row, the one that folds it through partial results.
TEST(SplitReductions, AKernelWithReductionsKeepingAndFoldingDimensionZero) {
  auto f = [](Tensor x) {
    Tensor y = fx::tanh(x);
    return std::make_tuple(fx::sum(y, {0}), fx::sum(y, {1}), fx::sum(y));
  };
  Array x = random({2048, 96}, 5);
  auto cpu = fx::jit(f, fx::Backend::Cpu);
  std::string kernels = cpu.lower(x).kernels();
  EXPECT_TRUE(std::regex_search(kernels, std::regex("split [0-9]+: tanh reduce_sum reduce_sum reduce_sum"))) << kernels;
  auto got = same_at_every_thread_count([&] {
    auto [a, b, c] = cpu(x);
    return std::vector<Array>{a, b, c};
  });
  auto [a, b, c] = fx::jit(f, fx::Backend::Interp)(x);
  expect_near_all(got[0], a.to_doubles(), 1e-4);
  expect_near_all(got[1], b.to_doubles(), 1e-4);
  expect_near_all(got[2], c.to_doubles(), 1e-4);
}

// Inside a loop body the partial results live in the body's arena.
TEST(SplitReductions, ASplitKernelInsideAScan) {
  auto f = [](Tensor x) {
    return fx::fori_loop(
        0, 3, [&](Tensor, Tensor acc) { return acc * 0.5 + fx::sum(fx::tanh(x * acc), {0}) * 1e-3; },
        fx::sum(x, {0}) * 0.01);
  };
  Array x = random({4096, 32}, 6);
  auto cpu = fx::jit(f, fx::Backend::Cpu);
  std::string kernels = cpu.lower(x).kernels();
  EXPECT_TRUE(std::regex_search(
      kernels, std::regex("kernel 0 loop\\[[a-z]+\\] \\[4096,32\\] split [0-9]+: mul tanh reduce_sum")))
      << kernels;
  auto got = same_at_every_thread_count([&] { return std::vector<Array>{cpu(x)}; });
  expect_near_all(got[0], fx::jit(f, fx::Backend::Interp)(x).to_doubles(), 1e-4);
}

TEST(WideProducts, ThreadsSplitTheirPanelsAndGetTheSameBits) {
  // Wider (in panels) than tall (in row tiles): threads take shares of B's panels, the last
  // one narrower than a panel, over several k-blocks; the epilogue runs over all of a small
  // result at once, and tile by tile over a larger one.
  auto f = [](Tensor a, Tensor b, Tensor bias) { return fx::tanh(fx::matmul(a, b) + bias); };
  // At least 16 panels split even where there are more row tiles (W5's dW).
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{24, 200, 600}, {48, 400, 300}, {200, 520, 70}}) {
    Array a = random({m, k}, 11), b = random({k, n}, 12, 0.1), bias = random({1, n}, 13);
    auto cpu = fx::jit(f, fx::Backend::Cpu);
    auto got = same_at_every_thread_count([&] { return std::vector<Array>{cpu(a, b, bias)}; });
    expect_near_all(got[0], fx::jit(f, fx::Backend::Interp)(a, b, bias).to_doubles(), 1e-5);
  }
}

TEST(TallProducts, ThreadsTakeWholeRegisterTilesOfRowsAndGetTheSameBits) {
  // Row counts that no thread count divides into whole tiles; a plain product (rows shared by
  // threads) and one ending in a full sum (a fixed number of parts).
  auto f = [](Tensor a, Tensor b) { return fx::tanh(fx::matmul(a, b)); };
  auto loss = [](Tensor a, Tensor b) { return fx::sum(fx::exp(fx::matmul(a, b))); };
  for (int64_t m : {100, 301}) {
    Array a = random({m, 512}, 14, 0.1), b = random({512, 64}, 15, 0.1);
    auto cpu = fx::jit(f, fx::Backend::Cpu);
    auto got = same_at_every_thread_count([&] { return std::vector<Array>{cpu(a, b)}; });
    expect_near_all(got[0], fx::jit(f, fx::Backend::Interp)(a, b).to_doubles(), 1e-5);
    auto summed = fx::jit(loss, fx::Backend::Cpu);
    auto total = same_at_every_thread_count([&] { return std::vector<Array>{summed(a, b)}; });
    expect_near_all(total[0], fx::jit(loss, fx::Backend::Interp)(a, b).to_doubles(), 1e-5);
  }
}

// A layer's weight applied to every sequence of a batch is packed once for all of them, into
// scratch bytes, and every entry's tiles read the packed panels there: the weight's rows
// contiguous or transposed (packed through in-register transposes), a last panel narrower than
// the others, a last k-block shorter. The same bits at every thread count, the interpreter's
// values within rounding. A batch of products of different right operands packs each its own.
TEST(SharedPack, ABatchOfProductsOfOneWeightPacksItOnce) {
  auto plain = [](Tensor x, Tensor w, Tensor bias) { return fx::relu(fx::matmul(x, w) + bias); };
  auto transposed = [](Tensor x, Tensor wt, Tensor bias) { return fx::relu(fx::matmul(x, fx::transpose(wt)) + bias); };
  for (fx::Shape dims : {fx::Shape{16, 24, 600, 70}, {8, 13, 1100, 33}, {4, 97, 512, 64}}) {
    int64_t batch = dims[0], m = dims[1], k = dims[2], n = dims[3];
    Array x = random({batch, m, k}, 40, 0.5), w = random({k, n}, 41, 0.1), wt = random({n, k}, 42, 0.1),
          bias = random({1, n}, 43);
    auto cpu = fx::jit(plain, fx::Backend::Cpu);
    std::string kernels = cpu.lower(x, w, bias).kernels();
    EXPECT_NE(kernels.find("shared pack"), std::string::npos) << kernels;
    auto got = same_at_every_thread_count([&] { return std::vector<Array>{cpu(x, w, bias)}; });
    expect_near_all(got[0], fx::jit(plain, fx::Backend::Interp)(x, w, bias).to_doubles(), 1e-5);
    auto cpu_t = fx::jit(transposed, fx::Backend::Cpu);
    kernels = cpu_t.lower(x, wt, bias).kernels();
    EXPECT_NE(kernels.find("shared pack"), std::string::npos) << kernels;
    got = same_at_every_thread_count([&] { return std::vector<Array>{cpu_t(x, wt, bias)}; });
    expect_near_all(got[0], fx::jit(transposed, fx::Backend::Interp)(x, wt, bias).to_doubles(), 1e-5);
  }
  auto batched = [](Tensor x, Tensor w) { return fx::matmul(x, w); };
  Array x = random({16, 24, 600}, 44, 0.5), ws = random({16, 600, 70}, 45, 0.1);
  auto each = fx::jit(batched, fx::Backend::Cpu);
  std::string kernels = each.lower(x, ws).kernels();
  EXPECT_EQ(kernels.find("shared pack"), std::string::npos) << kernels;
  auto got = same_at_every_thread_count([&] { return std::vector<Array>{each(x, ws)}; });
  expect_near_all(got[0], fx::jit(batched, fx::Backend::Interp)(x, ws).to_doubles(), 1e-5);
}

// Inside a loop body, whose arena the memory plan makes again with the packing's scratch in it.
TEST(SharedPack, ALoopBodysBatchOfProductsPacksItsWeightOnce) {
  auto f = [](Tensor w, Tensor xs) {
    auto body = [&](Tensor h, Tensor x) {
      Tensor next = fx::tanh(fx::matmul(x + h, w));
      return std::make_pair(next, next * 0.5);
    };
    auto [h, ys] = fx::scan(body, fx::zeros({16, 8, 128}), xs);
    return std::make_tuple(h, ys);
  };
  Array w = random({128, 128}, 51, 0.1), xs = random({3, 16, 8, 128}, 52);
  expect_pair(f, "body:[^}]*matmul[^\\n]*shared pack", 1e-5, w, xs);
}

// Products side by side pack their weights first, side by side too, then run.
TEST(SharedPack, ProductsSideBySidePackFirst) {
  auto f = [](Tensor x, Tensor w1, Tensor w2) { return std::make_tuple(fx::matmul(x, w1), fx::matmul(x, w2)); };
  Array x = random({16, 64, 128}, 48, 0.5), w1 = random({128, 128}, 49, 0.1), w2 = random({128, 128}, 50, 0.1);
  expect_pair(f, "kernel 0 matmul.*shared pack\\nkernel 1 matmul.* beside: .*shared pack", 1e-5, x, w1, w2);
}

// Math functions give one result per element whether a thread's range puts it in a vectorized
// loop body or in a scalar remainder: rows of an odd length put the ranges' ends anywhere.
TEST(ThreadRanges, TranscendentalFunctionsGiveTheSameBitsWhereverARangeEnds) {
  auto f = [](Tensor x) { return fx::exp(x) + fx::tanh(x * 0.5) + fx::log(fx::abs(x) + 1.0) + fx::sigmoid(x); };
  for (const fx::Shape& shape : {fx::Shape{3, 100003}, fx::Shape{7, 4099}}) {
    Array x = random(shape, 21, 5);
    auto cpu = fx::jit(f, fx::Backend::Cpu);
    auto got = same_at_every_thread_count([&] { return std::vector<Array>{cpu(x)}; });
    expect_near_all(got[0], fx::jit(f, fx::Backend::Interp)(x).to_doubles(), 1e-5);
  }
}

// Kernels that do not depend on each other run side by side, as one hand-off to the threads:
// the same bits at every thread count. A product of a product waits for it.
TEST(SideBySide, IndependentProductsRunAsOneHandOff) {
  auto f = [](Tensor x, Tensor w1, Tensor w2) {
    return std::make_tuple(fx::matmul(fx::tanh(x), w1), fx::matmul(x, w2));
  };
  Array x = random({128, 64}, 30), w1 = random({64, 64}, 31, 0.2), w2 = random({64, 64}, 32, 0.2);
  expect_pair(f, "kernel 2 matmul\\[[a-z]+\\] \\[128,64\\] parallel beside: matmul", 1e-5, x, w1, w2);
  auto chain = [](Tensor x, Tensor w1, Tensor w2) { return fx::matmul(fx::matmul(x, w1), w2); };
  std::string kernels = fx::jit(chain, fx::Backend::Cpu).lower(x, w1, w2).kernels();
  EXPECT_EQ(kernels.find("beside"), std::string::npos) << kernels;
}

// The memory plan keeps apart the bytes of whatever kernels side by side read and write: one
// after the other, the second product would be computed where tanh's result was, which the
// first product reads last.
TEST(SideBySide, KernelsSideBySideShareNoBytes) {
  fx::ir::Program p = fx::ir::parse(
      "func @main(%0: f32[128,64], %1: f32[64,64], %2: f32[64,64]) -> (f32[128,64], f32[128,64]) {\n"
      "  %3 = tanh %0 : f32[128,64]\n"
      "  %4 = matmul %3, %1 : f32[128,64]\n"
      "  %5 = matmul %0, %2 : f32[128,64]\n"
      "  return %4, %5\n"
      "}");
  constexpr int64_t kBytes = 128 * 64 * 4;
  fx::kernel::RegionSchedule s = fx::kernel::schedule(p.body, true);
  ASSERT_EQ(s.kernels.size(), 3u) << fx::kernel::print(p.body, s);
  EXPECT_TRUE(s.kernels[2].beside_previous) << fx::kernel::print(p.body, s);
  EXPECT_TRUE(s.offset[3] + kBytes <= s.offset[5] || s.offset[5] + kBytes <= s.offset[3])
      << "tanh at " << s.offset[3] << ", the second product at " << s.offset[5];
  fx::kernel::FusionOptions one_by_one;
  one_by_one.side_by_side_kernels = false;
  fx::kernel::RegionSchedule t = fx::kernel::schedule(p.body, true, one_by_one);
  EXPECT_FALSE(t.kernels[2].beside_previous);
  EXPECT_EQ(t.offset[3], t.offset[5]) << "one after the other, the bytes are shared";
}

// A stacked LSTM's step: the second layer's recurrent product runs beside the first layer's
// input product (it waits for nothing in the step), and in the backward pass the weight
// gradients run beside each other. Values and gradients the same bits at every thread count
// and the interpreter's within rounding.
TEST(SideBySide, AStackedLstmsProductsShareTheThreads) {
  const int64_t in = 32, hidden = 32, batch = 64, steps = 4;
  auto loss = [=](Tensor Wx1, Tensor Wh1, Tensor b1, Tensor Wx2, Tensor Wh2, Tensor b2, Tensor xs) {
    using State = std::pair<std::pair<Tensor, Tensor>, std::pair<Tensor, Tensor>>;
    auto body = [&](State s, Tensor x) {
      auto [h1, c1] = fx::testing::lstm_cell(Wx1, Wh1, b1, x, s.first.first, s.first.second);
      auto [h2, c2] = fx::testing::lstm_cell(Wx2, Wh2, b2, h1, s.second.first, s.second.second);
      return std::make_pair(State{{h1, c1}, {h2, c2}}, fx::sum(h2 * h2));
    };
    Tensor zeros = fx::zeros({hidden, batch});
    auto [state, ys] = fx::scan(body, State{{zeros, zeros}, {zeros, zeros}}, xs);
    return fx::sum(ys);
  };
  auto step = fx::value_and_grad(loss, {0, 1, 2, 3, 4, 5});
  std::vector<Array> args{random({4 * hidden, in}, 60, 0.2),     random({4 * hidden, hidden}, 61, 0.2),
                          random({4 * hidden, 1}, 62, 0.2),      random({4 * hidden, hidden}, 63, 0.2),
                          random({4 * hidden, hidden}, 64, 0.2), random({4 * hidden, 1}, 65, 0.2),
                          random({steps, in, batch}, 66)};
  auto cpu = fx::jit(step, fx::Backend::Cpu);
  auto call = [&](auto& f) { return f(args[0], args[1], args[2], args[3], args[4], args[5], args[6]); };
  std::string kernels = cpu.lower(args[0], args[1], args[2], args[3], args[4], args[5], args[6]).kernels();
  auto beside = [&](const std::string& pattern) {
    std::regex r(pattern);
    return std::distance(std::sregex_iterator(kernels.begin(), kernels.end(), r), std::sregex_iterator());
  };
  EXPECT_GE(beside("kernel 1 matmul\\[[a-z]+\\] \\[128,64\\] parallel beside: matmul \\|"), 1) << kernels;
  EXPECT_GE(beside("matmul\\[[a-z]+\\] \\[128,32\\] parallel beside: matmul"), 2) << kernels;
  auto got = same_at_every_thread_count([&] {
    auto [value, grads] = call(cpu);
    std::vector<Array> out{value};
    out.insert(out.end(), grads.begin(), grads.end());
    return out;
  });
  auto interp = fx::jit(step, fx::Backend::Interp);
  auto [value, grads] = call(interp);
  expect_near_all(got[0], value.to_doubles(), 1e-4);
  for (size_t i = 0; i < grads.size(); ++i) expect_near_all(got[i + 1], grads[i].to_doubles(), 1e-4);
}

}  // namespace
