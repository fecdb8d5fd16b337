// The matmul kernel's code paths against the interpreter: full and partial register tiles and
// panels, rows left over after the full tiles (2 to 5 of them, run as tiles of 4, 2 and 1),
// several k-blocks, transposed operands (packed through in-register transposes), batches,
// products narrower than a vector (a panel padded with zeros, over one or several k-blocks; a
// dot product per element where the rows are one register tile),
// few rows split across threads, and few rows times a transpose (computed as transposed tiles).
// Each case also asserts the strategy its kernel took, so that a moved threshold cannot leave a
// path untested.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/test_util.h"
#include "cpu/strategies.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;

namespace {

Array uniform(fx::DType t, const fx::Shape& shape, uint32_t seed) {
  return fx::testing::make(t, fx::testing::random_doubles(fx::numel(shape), -1, 1, seed), shape);
}

// Runs f on the CPU backend and on the interpreter and compares element by element, allowing
// the rounding of a k-term sum; f's kernel 0 must be a matmul taking `strategy`.
template <class F>
void expect_same_as_interpreter(F f, const Array& a, const Array& b, int64_t k, const std::string& strategy) {
  auto compiled = fx::jit(f, fx::Backend::Cpu);
  std::vector<std::string> kernels = fx::testing::kernel_strategies(compiled.lower(a, b).kernels());
  ASSERT_FALSE(kernels.empty());
  EXPECT_EQ(kernels[0], "matmul[" + strategy + "]");
  std::vector<double> got = compiled(a, b).to_doubles();
  std::vector<double> want = fx::jit(f, fx::Backend::Interp)(a, b).to_doubles();
  ASSERT_EQ(got.size(), want.size());
  double u = a.dtype() == fx::f64 ? 0x1p-53 : 0x1p-24;  // f16 and bf16 operands sum in f32
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 4.0 * static_cast<double>(k) * u * (1 + std::abs(want[i]))) << "element " << i;
  }
}

struct Case {
  int64_t m, n, k;
};

// The rule of backends/cpu/matmul_transposed.cpp: A B^T with W < m <= 2W rows (W the tile's
// vector lanes, at least 8), at least min(12, W, (R - 3) / 2) columns (R the vector registers), one k-block (k <= 256,
// a multiple of W) and no reduction in the epilogue is computed as transposed tiles; every other product as register
// tiles over packed panels.
std::string product_strategy(fx::DType t, Case c, bool right_transposed, bool reduces = false) {
  int64_t w = fx::testing::matmul_lanes(t);
  bool transposed = right_transposed && !reduces && w >= 8 && c.m > w && c.m <= 2 * w &&
                    c.n >= std::min<int64_t>({12, w, (fx::testing::vector_registers() - 3) / 2}) && c.k <= 256 &&
                    c.k % w == 0;
  return transposed ? "transposed-tiles" : "tiles";
}

}  // namespace

TEST(CpuMatmul, ShapesAcrossTilesPanelsAndBlocks) {
  // 101 x 100 x 600: a result over 32 KiB, so the epilogue runs tile by tile after the last of
  // several k-blocks, on full tiles and on the 5 rows left over (tiles of 4 and 1) and the
  // columns.
  for (fx::DType t : {fx::f32, fx::f64}) {
    for (Case c : {Case{1, 1, 1}, Case{6, 32, 16}, Case{7, 45, 70}, Case{13, 33, 300}, Case{32, 128, 784},
                   Case{5, 3, 9}, Case{20, 40, 70}, Case{23, 17, 300}, Case{27, 64, 33}, Case{13, 1, 300},
                   Case{128, 10, 84}, Case{3, 2, 600}, Case{101, 100, 600}}) {
      SCOPED_TRACE(std::string(fx::dtype_name(t)) + " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k));
      Array a = uniform(t, {c.m, c.k}, 1), b = uniform(t, {c.k, c.n}, 2), bt = uniform(t, {c.n, c.k}, 3), at = uniform(t, {c.k, c.m}, 4);
      expect_same_as_interpreter([](Tensor x, Tensor y) { return fx::matmul(x, y); }, a, b, c.k, "tiles");
      // Transposed right operand: columns contiguous along k (in-register transpose path).
      expect_same_as_interpreter([](Tensor x, Tensor y) { return fx::matmul(x, fx::transpose(y)); }, a, bt, c.k,
                                 product_strategy(t, c, true));
      // Transposed left operand, with an epilogue.
      expect_same_as_interpreter([](Tensor x, Tensor y) { return fx::tanh(fx::matmul(fx::transpose(x), y)); }, at, b,
                                 c.k, "tiles");
      // Row sums in the epilogue (accumulated in registers along each tile's row), beside a
      // stored result.
      expect_same_as_interpreter(
          [](Tensor x, Tensor y) {
            Tensor e = fx::exp(fx::matmul(x, y) * 0.1);
            return fx::concat({fx::sum(e, {1}), fx::sum(e * e, {1})}, 0) + fx::sum(e);
          },
          a, b, c.k * c.n, "tiles");
    }
  }
}

TEST(CpuMatmul, BatchedWithBroadcastOperands) {
  Array a = uniform(fx::f32, {3, 1, 20, 40}, 5), b = uniform(fx::f32, {4, 40, 35}, 6);
  expect_same_as_interpreter([](Tensor x, Tensor y) { return fx::matmul(x, y); }, a, b, 40, "tiles");
}

TEST(CpuMatmul, FewRowsAsOneTileAlsoWhenThreadsSplitThem) {
  // Up to 12 rows (AVX-512) are one register tile; split across two threads, each thread's
  // rows are fewer than a tile and run as tiles of 4, 2 and 1 rows.
  int before = fx::num_threads();
  for (int threads : {1, 2}) {
    fx::set_num_threads(threads);
    for (int64_t m : {3, 10, 12}) {
      SCOPED_TRACE("m=" + std::to_string(m) + " threads " + std::to_string(threads));
      Array a = uniform(fx::f32, {m, 128}, 7), b = uniform(fx::f32, {128, 600}, 8);
      expect_same_as_interpreter([](Tensor x, Tensor y) { return fx::relu(fx::matmul(x, y)); }, a, b, 128, "tiles");
    }
  }
  fx::set_num_threads(before);
}

TEST(CpuMatmul, FewRowsTimesATransposeAsTransposedTiles) {
  // A B^T with one to two vectors of rows and one k-block (W3's dW1 = dh x^T) is computed as
  // C^T tiles of 12 columns: full tiles, a narrower last one, rows short of the second vector,
  // an epilogue, and columns split across two threads. The cases straddle W and 2W for both
  // 8-lane (AVX2) and 16-lane (AVX-512) f32 tiles, so some take the path on either.
  int before = fx::num_threads();
  int transposed_tiles = 0;
  for (int threads : {1, 2}) {
    fx::set_num_threads(threads);
    for (fx::DType t : {fx::f32, fx::f64}) {
      for (Case c : {Case{32, 784, 128}, Case{20, 45, 64}, Case{17, 12, 16}, Case{12, 37, 32}, Case{9, 300, 240}}) {
        SCOPED_TRACE(std::string(fx::dtype_name(t)) + " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
                     " k=" + std::to_string(c.k) + " threads " + std::to_string(threads));
        Array a = uniform(t, {c.m, c.k}, 11), bt = uniform(t, {c.n, c.k}, 12);
        std::string strategy = product_strategy(t, c, true);
        transposed_tiles += strategy == "transposed-tiles";
        expect_same_as_interpreter([](Tensor x, Tensor y) { return fx::matmul(x, fx::transpose(y)); }, a, bt, c.k,
                                   strategy);
        expect_same_as_interpreter([](Tensor x, Tensor y) { return fx::sin(fx::matmul(x, fx::transpose(y))) * 2.0; }, a,
                                   bt, c.k, strategy);
        // A row reduction in the epilogue (threads split these tiles by columns, so it runs as
        // the packed kernel instead).
        expect_same_as_interpreter([](Tensor x, Tensor y) { return fx::sum(fx::matmul(x, fx::transpose(y)), {1}); }, a,
                                   bt, c.k * c.n, "tiles");
      }
    }
  }
  fx::set_num_threads(before);
  EXPECT_GT(transposed_tiles, 0) << "no case took the transposed-tiles path";
}

TEST(CpuMatmul, HalfOperandsAreReadWidenedWithoutAConversionKernel) {
  // A product of f16 or bf16 operands sums in f32: it reads the 16-bit buffers through their
  // strided views and widens each element as it loads it, on every path that loads them (the
  // packing of B by rows and by in-register transposes, A's elements in the register tiles,
  // transposed tiles' vector loads of both, a batch with a broadcast operand). No kernel
  // stores an f32 copy of an operand. Where the f32 tiles run, the bits are those of the same
  // product of the f32 values the 16-bit operands hold; bf16 register tiles on AVX-512-BF16
  // (the next test, taken before transposed tiles) sum in another order, within f32 rounding of
  // it before the result's own.
  int w = fx::testing::matmul_lanes(fx::f32);
  struct Product {
    std::string name;
    Tensor (*f)(Tensor, Tensor);
    fx::Shape a, b;
    int64_t k;
  };
  std::vector<Product> products = {
      {"rows", [](Tensor x, Tensor y) { return fx::matmul(x, y); }, {23, 70}, {70, 45}, 70},
      {"transposed B", [](Tensor x, Tensor y) { return fx::matmul(x, fx::transpose(y)); }, {13, 300}, {33, 300}, 300},
      {"transposed A", [](Tensor x, Tensor y) { return fx::matmul(fx::transpose(x), y); }, {70, 20}, {70, 40}, 70},
      {"transposed tiles",
       [](Tensor x, Tensor y) { return fx::matmul(x, fx::transpose(y)); },
       {w + 3, 4 * w},
       {45, 4 * w},
       4 * w},
      {"batch", [](Tensor x, Tensor y) { return fx::matmul(x, y); }, {3, 1, 20, 40}, {4, 40, 35}, 40},
  };
  for (fx::DType t : {fx::bf16, fx::f16}) {
    for (const Product& p : products) {
      SCOPED_TRACE(std::string(fx::dtype_name(t)) + " " + p.name);
      Array a = uniform(t, p.a, 21), b = uniform(t, p.b, 22);
      Array a32 = fx::testing::make(fx::f32, a.to_doubles(), p.a),
            b32 = fx::testing::make(fx::f32, b.to_doubles(), p.b);
      auto halves = fx::jit(p.f, fx::Backend::Cpu);
      auto in_f32 = fx::jit([&p, t](Tensor x, Tensor y) { return fx::cast(p.f(x, y), t); }, fx::Backend::Cpu);
      std::string listing = halves.lower(a, b).kernels();
      std::vector<std::string> want_strategies = fx::testing::kernel_strategies(in_f32.lower(a32, b32).kernels());
      bool pairs = t == fx::bf16 && fx::testing::bf16_products();
      if (pairs) want_strategies[0] = "matmul[bf16-tiles]";
      EXPECT_EQ(fx::testing::kernel_strategies(listing), want_strategies) << listing;
      EXPECT_EQ(fx::testing::own_ops(listing, "convert"), 1) << "more than the result's conversion:\n" << listing;
      Array got = halves(a, b), want = in_f32(a32, b32);
      ASSERT_EQ(got.dtype(), t);
      if (!pairs) {
        EXPECT_EQ(got.to_doubles(), want.to_doubles());
        continue;
      }
      std::vector<double> g = got.to_doubles(), e = want.to_doubles();
      for (size_t i = 0; i < g.size(); ++i)
        ASSERT_NEAR(g[i], e[i], 0x1p-8 * std::abs(e[i]) + 4.0 * static_cast<double>(p.k) * 0x1p-24) << "element " << i;
    }
  }
}

TEST(CpuMatmul, ComputedHalfOperandsAreStoredOnceAndReadWidened) {
  // An operand a kernel computes in 16 bits (tanh's result) is stored in 16 bits and read by
  // the product, widened: two kernels, the result's conversion the only one. Where the view
  // cannot go on below the conversion (a reshape merging a slice's rows), the product reads
  // the converted value through the view above it instead, still without a copy of the
  // transpose.
  for (fx::DType t : {fx::bf16, fx::f16}) {
    SCOPED_TRACE(fx::dtype_name(t));
    double u = t == fx::bf16 ? 0x1p-8 : 0x1p-11;
    auto close = [u](const Array& got, const Array& want, double k) {
      std::vector<double> g = got.to_doubles(), e = want.to_doubles();
      ASSERT_EQ(g.size(), e.size());
      for (size_t i = 0; i < g.size(); ++i)
        ASSERT_NEAR(g[i], e[i], 2 * u * std::abs(e[i]) + 4 * k * 0x1p-24) << "element " << i;
    };
    auto computed = [](Tensor x, Tensor y) { return fx::matmul(fx::tanh(x), y); };
    Array x = uniform(t, {23, 70}, 41), y = uniform(t, {70, 45}, 42);
    auto f = fx::jit(computed, fx::Backend::Cpu);
    std::string listing = f.lower(x, y).kernels();
    EXPECT_EQ(fx::testing::kernel_strategies(listing).size(), 2u) << listing;
    EXPECT_EQ(fx::testing::own_ops(listing, "convert"), 1) << listing;
    close(f(x, y), fx::jit(computed, fx::Backend::Interp)(x, y), 70);
    auto sliced = [](Tensor a, Tensor b) {
      return fx::matmul(a, fx::transpose(fx::reshape(fx::slice(b, {0, 0, 0}, {4, 3, 8}), {12, 8})));
    };
    Array a = uniform(t, {5, 8}, 43), b = uniform(t, {4, 6, 8}, 44);
    auto g = fx::jit(sliced, fx::Backend::Cpu);
    listing = g.lower(a, b).kernels();
    EXPECT_EQ(fx::testing::kernel_strategies(listing).size(), 2u) << "a copy of the transpose:\n" << listing;
    close(g(a, b), fx::jit(sliced, fx::Backend::Interp)(a, b), 8);
  }
}

TEST(CpuMatmul, Bf16PairsFlushSubnormalsAsDocumented) {
  // docs/precision.md: VDPBF16PS reads subnormal bf16 values (below 2^-126) as zero. Rows of
  // 2^-130 times 1 sum to 64 x 2^-130 on the f32 tiles, to 0 on the bf16 pairs' tiles; normal
  // values are unaffected either way.
  auto widened = [](Tensor a, Tensor b) { return fx::matmul(fx::cast(a, fx::f32), fx::cast(b, fx::f32)); };
  std::vector<double> tiny(16 * 64, std::ldexp(1.0, -130)), ones(64 * 32, 1.0);
  Array a = fx::testing::make(fx::bf16, tiny, {16, 64}), b = fx::testing::make(fx::bf16, ones, {64, 32});
  auto cpu = fx::jit(widened, fx::Backend::Cpu);
  bool pairs = fx::testing::bf16_products();
  ASSERT_EQ(cpu.lower(a, b).kernels().find("bf16-tiles") != std::string::npos, pairs);
  for (double v : cpu(a, b).to_doubles()) ASSERT_EQ(v, pairs ? 0.0 : std::ldexp(64.0, -130));
  std::vector<double> normal(16 * 64, std::ldexp(1.0, -100));
  for (double v : cpu(fx::testing::make(fx::bf16, normal, {16, 64}), b).to_doubles())
    ASSERT_EQ(v, std::ldexp(64.0, -100));
}

TEST(CpuMatmul, Bf16PairsAcrossPanelsBlocksAndLayouts) {
  // f32 products of bf16 values, as JAX writes them (operands cast to f32): on AVX-512-BF16
  // register tiles of bf16 pairs (every pair a VDPBF16PS lane), elsewhere (and under
  // FLUXION_CPU_FEATURES=avx512 or avx2) the f32 tiles or transposed tiles, against the
  // interpreter. Odd depths
  // (a last pair with zero), several k-blocks with an odd last one, narrow and partial panels,
  // rows left over, B packed by rows (vector loads interleaved) and by columns (a transposed
  // B), A's pairs in one load and in two (a transposed A), an epilogue with row sums, a batch
  // of products of one B (packed once, shared). B's columns are packed by blocks of 16 pairs
  // transposed in registers where a k-block holds one (k = 71, 300, 519, ...), pair by pair
  // past them.
  std::string tiles = fx::testing::bf16_products() ? "bf16-tiles" : "tiles";
  auto to_f32 = [](Tensor x) { return fx::cast(x, fx::f32); };
  for (Case c : {Case{6, 32, 16}, Case{7, 45, 71}, Case{13, 33, 519}, Case{23, 17, 300}, Case{32, 128, 784},
                 Case{2, 64, 3}, Case{101, 100, 600}}) {
    SCOPED_TRACE("m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k));
    Array a = uniform(fx::bf16, {c.m, c.k}, 31), b = uniform(fx::bf16, {c.k, c.n}, 32);
    Array at = uniform(fx::bf16, {c.k, c.m}, 33), bt = uniform(fx::bf16, {c.n, c.k}, 34);
    expect_same_as_interpreter([&](Tensor x, Tensor y) { return fx::matmul(to_f32(x), to_f32(y)); }, a, b, c.k, tiles);
    expect_same_as_interpreter([&](Tensor x, Tensor y) { return fx::matmul(to_f32(x), fx::transpose(to_f32(y))); }, a,
                               bt, c.k, fx::testing::bf16_products() ? tiles : product_strategy(fx::f32, c, true));
    expect_same_as_interpreter(
        [&](Tensor x, Tensor y) {
          Tensor e = fx::tanh(fx::matmul(fx::transpose(to_f32(x)), to_f32(y)));
          return fx::concat({fx::reshape(e, {c.m * c.n}), fx::sum(e, {1})}, 0);
        },
        at, b, c.k * 2, tiles);
  }
  Array a = uniform(fx::bf16, {8, 64, 200}, 35), b = uniform(fx::bf16, {200, 96}, 36);
  auto batch = [&](Tensor x, Tensor y) { return fx::matmul(to_f32(x), to_f32(y)); };
  std::string listing = fx::jit(batch, fx::Backend::Cpu).lower(a, b).kernels();
  EXPECT_NE(listing.find("shared pack"), std::string::npos) << listing;
  expect_same_as_interpreter(batch, a, b, 200, tiles);
}
