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
  double u = a.dtype() == fx::f32 ? 0x1p-24 : 0x1p-53;
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
