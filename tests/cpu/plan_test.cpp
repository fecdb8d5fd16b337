// The CPU backend's kernel plans: chosen from a target's vector width and registers before any
// code is emitted, so they are asserted here for AVX2 and AVX-512 targets whatever the host, and
// Compiled::kernels() prints the host's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fluxion/fluxion.h>

#include "backends/cpu/plan.h"
#include "common/plan_rules_file.h"
#include "common/test_util.h"
#include "cpu/strategies.h"
#include "ir/ir.h"
#include "kernel/kernel_ir.h"

namespace fx = fluxion;
using fx::kernel::KernelPlan;
using fx::testing::PlanRulesFile;
using fx::kernel::Strategy;
using fx::kernel::Tile;

namespace {

fx::cpu::Target avx2() { return {.vector_bytes = 32, .matmul_vector_bytes = 32, .vector_registers = 16}; }
fx::cpu::Target avx512() { return {.vector_bytes = 64, .matmul_vector_bytes = 64, .vector_registers = 32}; }

// The plans of the top-level kernels of program `text`, scheduled as the CPU backend schedules
// it, for `target`.
std::vector<KernelPlan> plans(const std::string& text, const fx::cpu::Target& target) {
  fx::ir::Program p = fx::ir::parse(text);
  fx::kernel::RegionSchedule s = fx::kernel::schedule(p.body, true);
  fx::cpu::plan_kernels(p.body, s, target);
  std::vector<KernelPlan> out;
  for (const fx::kernel::Kernel& k : s.kernels) out.push_back(k.plan);
  return out;
}

std::string product(int64_t m, int64_t k, int64_t n) {
  std::string a = std::to_string(m) + "," + std::to_string(k), b = std::to_string(k) + "," + std::to_string(n),
              c = std::to_string(m) + "," + std::to_string(n);
  return "func @main(%0: f32[" + a + "], %1: f32[" + b + "]) -> (f32[" + c + "]) {\n  %2 = matmul %0, %1 : f32[" + c +
         "]\n  return %2\n}";
}

TEST(CpuPlans, ProductTilesFollowTheTargetsRegisters) {
  // W3's first layer, 32 x 784 @ 784 x 128: AVX2 tiles 6 rows by two 8-lane vectors, AVX-512 8
  // rows (32 is a multiple of 8) by two 16-lane vectors; k in blocks of 256.
  std::vector<KernelPlan> p = plans(product(32, 784, 128), avx2());
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].strategy, Strategy::Tiles);
  EXPECT_EQ(p[0].tile, (Tile{6, 16, 256, 0, 0}));
  EXPECT_EQ(p[0].vector_lanes, 8);
  p = plans(product(32, 784, 128), avx512());
  EXPECT_EQ(p[0].tile, (Tile{8, 32, 256, 0, 0}));
  EXPECT_EQ(p[0].vector_lanes, 16);
  // Rows that fit one register tile are one tile; a short k is one block.
  p = plans(product(10, 100, 64), avx512());
  EXPECT_EQ(p[0].tile, (Tile{10, 32, 100, 0, 0}));
  p = plans(product(10, 100, 64), avx2());
  EXPECT_EQ(p[0].tile.m, 6);
  // A 16 KiB L1 data cache holds a panel of 128 k-steps of two 64-byte vectors.
  fx::cpu::Target small_cache = avx512();
  small_cache.l1d_bytes = 16384;
  EXPECT_EQ(plans(product(32, 784, 128), small_cache)[0].tile, (Tile{8, 32, 128, 0, 0}));
}

TEST(CpuPlans, AProductThatFitsL1RunsItsEpilogueOnceOverTheWholeResult) {
  auto with_bias = [](int64_t m, int64_t k, int64_t n) {
    std::string a = std::to_string(m) + "," + std::to_string(k), b = std::to_string(k) + "," + std::to_string(n),
                c = std::to_string(m) + "," + std::to_string(n);
    return "func @main(%0: f32[" + a + "], %1: f32[" + b + "], %2: f32[" + c + "]) -> (f32[" + c +
           "]) {\n  %3 = matmul %0, %1 : f32[" + c + "]\n  %4 = add %3, %2 : f32[" + c + "]\n  return %4\n}";
  };
  // 32 x 128 f32 is 16 KiB: once; 256 x 512 (512 KiB): on each tile; without an epilogue: neither.
  EXPECT_TRUE(plans(with_bias(32, 784, 128), avx512())[0].whole_epilogue);
  EXPECT_FALSE(plans(with_bias(256, 64, 512), avx512())[0].whole_epilogue);
  EXPECT_FALSE(plans(product(32, 784, 128), avx512())[0].whole_epilogue);
}

TEST(CpuPlans, AWideProductSplitsItsColumnsAcrossThreads) {
  // 8 rows are one tile; 512 columns are 16 panels of 32: wider than tall, so threads split the
  // panels. A tall product splits its rows.
  EXPECT_TRUE(plans(product(8, 64, 512), avx512())[0].split_columns);
  EXPECT_FALSE(plans(product(512, 64, 8), avx512())[0].split_columns);
  // W5's dW, 256 x 4096 @ 4096 x 512: 32 row tiles but 16 panels, enough for 16 threads, each
  // packing its own instead of all 8 MiB of B; 15 panels are not.
  EXPECT_TRUE(plans(product(256, 4096, 512), avx512())[0].split_columns);
  EXPECT_FALSE(plans(product(256, 4096, 480), avx512())[0].split_columns);
}

TEST(CpuPlans, ABatchOfProductsOfOneWeightPacksItOnce) {
  // 16 x (64 x 512 @ 512 x 64) of one weight with AVX-512: its two k-blocks of two panels of
  // 256 x 32 packed once into the kernel's scratch bytes, which the memory plan keeps apart from
  // tanh's result, which the product reads.
  auto batch_of_one = [](int64_t batch, int64_t m, int64_t k, int64_t n, const std::string& a_op) {
    auto dims = [](std::vector<int64_t> d) {
      std::string out;
      for (int64_t x : d) out += (out.empty() ? "" : ",") + std::to_string(x);
      return out;
    };
    return "func @main(%0: f32[" + dims({batch, m, k}) + "], %1: f32[" + dims({k, n}) + "]) -> (f32[" +
           dims({batch, m, n}) + "]) {\n  %2 = " + a_op + " %0 : f32[" + dims({batch, m, k}) +
           "]\n  %3 = broadcast %1 : f32[" + dims({batch, k, n}) + "]\n  %4 = matmul %2, %3 : f32[" +
           dims({batch, m, n}) + "]\n  return %4\n}";
  };
  fx::ir::Program p = fx::ir::parse(batch_of_one(16, 64, 512, 64, "tanh"));
  fx::kernel::RegionSchedule s = fx::kernel::schedule(p.body, true);
  fx::cpu::plan_kernels(p.body, s, avx512());
  ASSERT_EQ(s.kernels.size(), 2u) << fx::kernel::print(p.body, s);
  const fx::kernel::Kernel& k = s.kernels[1];
  EXPECT_TRUE(k.plan.shared_pack);
  EXPECT_EQ(k.scratch_bytes, 2 * 2 * 256 * 32 * 4);
  int64_t tanh_bytes = 16 * 64 * 512 * 4;
  EXPECT_TRUE(k.scratch_offset + k.scratch_bytes <= s.offset[2] || s.offset[2] + tanh_bytes <= k.scratch_offset)
      << "scratch at " << k.scratch_offset << ", tanh's result at " << s.offset[2];
  EXPECT_GE(s.arena_bytes, tanh_bytes + k.scratch_bytes);
  // Copies of B worth less than a hand-off, or a batch of one entry, are made for each entry;
  // threads splitting one product's rows or panels pack B each.
  for (int64_t batch : {2, 1}) {
    std::vector<KernelPlan> p = plans(batch_of_one(batch, 64, batch == 2 ? 64 : 1024, 64, "neg"), avx512());
    ASSERT_EQ(p.size(), 2u);
    EXPECT_EQ(p[1].strategy, Strategy::Tiles);
    EXPECT_FALSE(p[1].shared_pack) << batch;
  }
  EXPECT_TRUE(plans(batch_of_one(2, 64, 1024, 64, "neg"), avx512())[1].shared_pack);
  EXPECT_FALSE(plans(product(256, 4096, 480), avx512())[0].shared_pack);
  EXPECT_FALSE(plans(product(256, 4096, 512), avx512())[0].shared_pack);
}

TEST(CpuPlans, FewRowsTimesATransposeRunAsTransposedTiles) {
  // dW = dh x^T as W3's weight gradient: 20 rows (W < 20 <= 2W for 16 lanes), B's columns
  // contiguous along k (a transpose), one k-block of a multiple of 16.
  std::string text = R"(func @main(%0: f32[20,128], %1: f32[64,128]) -> (f32[20,64]) {
  %2 = transpose %1 {perm=[1,0]} : f32[128,64]
  %3 = matmul %0, %2 : f32[20,64]
  return %3
})";
  std::vector<KernelPlan> p = plans(text, avx512());
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].strategy, Strategy::TransposedTiles);
  // 12 columns of C by two vectors of rows: 24 accumulators of AVX-512's 32 registers.
  EXPECT_EQ(p[0].tile, (Tile{12, 32, 128, 0, 0}));
  // With AVX2's 8 lanes, 20 rows are more than 2W: the ordinary tiles.
  EXPECT_EQ(plans(text, avx2())[0].strategy, Strategy::Tiles);
}

TEST(CpuPlans, ConvolutionsSlideWhereTheirWindowsFitTheStack) {
  std::string conv = R"(func @main(%0: f32[4,6,14,14], %1: f32[16,6,5,5]) -> (f32[4,16,10,10]) {
  %2 = conv2d %0, %1 {strides=[1,1], padding=[0,0,0,0], dilation=[1,1], groups=1} : f32[4,16,10,10]
  return %2
})";
  std::vector<KernelPlan> p = plans(conv, avx512());
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].strategy, Strategy::Sliding);
  EXPECT_EQ(p[0].vector_lanes, 16);
  // A stride of 2 cannot slide: im2col, one k-block per input channel (its 5 x 5 taps).
  std::string strided = R"(func @main(%0: f32[4,6,14,14], %1: f32[16,6,5,5]) -> (f32[4,16,5,5]) {
  %2 = conv2d %0, %1 {strides=[2,2], padding=[0,0,0,0], dilation=[1,1], groups=1} : f32[4,16,5,5]
  return %2
})";
  p = plans(strided, avx512());
  EXPECT_EQ(p[0].strategy, Strategy::Im2col);
  EXPECT_EQ(p[0].tile.k, 25);
}

TEST(CpuPlans, LoopKernelsArePlannedByWhatTheyRead) {
  std::string flat = R"(func @main(%0: f32[64,32]) -> (f32[64,32]) {
  %1 = sin %0 : f32[64,32]
  return %1
})";
  EXPECT_EQ(plans(flat, avx2())[0].strategy, Strategy::Flat);
  std::string transposed = R"(func @main(%0: f32[32,64]) -> (f32[64,32]) {
  %1 = transpose %0 {perm=[1,0]} : f32[64,32]
  %2 = sin %1 : f32[64,32]
  return %2
})";
  EXPECT_EQ(plans(transposed, avx2())[0].strategy, Strategy::Nest);
  std::string concat = R"(func @main(%0: f32[8,3], %1: f32[8,5]) -> (f32[8,8]) {
  %2 = concat %0, %1 {axes=[1]} : f32[8,8]
  return %2
})";
  std::vector<KernelPlan> p = plans(concat, avx2());
  EXPECT_EQ(p[0].strategy, Strategy::Pieces);
  EXPECT_EQ(p[0].node, 0);
}

TEST(CpuPlans, KernelListingPrintsTheHostsPlan) {
  auto f = [](fx::Tensor a, fx::Tensor b) { return fx::matmul(a, b); };
  fx::Array a(std::vector<float>(32 * 784, 0.5f), {32, 784}), b(std::vector<float>(784 * 128, 0.25f), {784, 128});
  std::string listing = fx::jit(f, fx::Backend::Cpu).lower(a, b).kernels();
  int lanes = fx::testing::matmul_lanes(fx::DType::f32);
  int rows = fx::testing::vector_registers() >= 32 ? 8 : 6;
  // 32 rows are 4 or 6 tiles, 128 columns 4 or 8 panels: threads split the rows or the panels.
  std::string details = "| tile " + std::to_string(rows) + "x" + std::to_string(2 * lanes) + "x256 lanes " +
                        std::to_string(lanes) + (128 / (2 * lanes) >= (32 + rows - 1) / rows ? " split columns" : "");
  EXPECT_NE(listing.find("matmul[tiles]"), std::string::npos) << listing;
  EXPECT_NE(listing.find(details), std::string::npos) << listing;
}

TEST(CpuPlans, RulesChangeATilesRowsAndKBlockAndTheCodeFollows) {
  auto f = [](fx::Tensor a, fx::Tensor b) { return fx::tanh(fx::matmul(a, b)); };
  std::vector<double> av = fx::testing::random_doubles(37 * 300, -1, 1, 1),
                      bv = fx::testing::random_doubles(300 * 70, -1, 1, 2);
  fx::Array a(std::vector<float>(av.begin(), av.end()), {37, 300}),
      b(std::vector<float>(bv.begin(), bv.end()), {300, 70});
  std::vector<double> want = fx::jit(f, fx::Backend::Interp)(a, b).to_doubles();
  std::string tile = "3x" + std::to_string(2 * fx::testing::matmul_lanes(fx::DType::f32)) + "x64";
  PlanRulesFile rules("# three rows a tile, k in blocks of 64\ntiles match=[37,70] tile=" + tile + "\n");
  auto compiled = fx::jit(f, fx::Backend::Cpu);
  std::string listing = compiled.lower(a, b).kernels();
  EXPECT_NE(listing.find("| tile " + tile + " "), std::string::npos) << listing;
  std::vector<double> got = compiled(a, b).to_doubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << i;
}

TEST(CpuPlans, RulesTheCodeCannotRunAreErrors) {
  auto f = [](fx::Tensor a, fx::Tensor b) { return fx::matmul(a, b); };
  fx::Array a(std::vector<float>(8 * 16, 1.0f), {8, 16}), b(std::vector<float>(16 * 8, 1.0f), {16, 8});
  {
    PlanRulesFile rules("tiles tile=40x16x16\n");  // more rows than the registers hold
    EXPECT_THROW(fx::jit(f, fx::Backend::Cpu)(a, b), fx::Error);
  }
  {
    PlanRulesFile rules("tiles tile=4x4\n");
    EXPECT_THROW(fx::jit(f, fx::Backend::Cpu)(a, b), fx::Error);
  }
  {
    PlanRulesFile rules("spiral tile=4x4x4\n");
    EXPECT_THROW(fx::jit(f, fx::Backend::Cpu)(a, b), fx::Error);
  }
}

TEST(CpuPlans, StrategyNamesRoundTrip) {
  EXPECT_EQ(fx::kernel::strategy_named("transposed-tiles"), Strategy::TransposedTiles);
  EXPECT_STREQ(fx::kernel::strategy_name(Strategy::SubgroupRows), "subgroup-rows");
  EXPECT_THROW(fx::kernel::strategy_named("spiral"), fx::Error);
}

}  // namespace

TEST(CpuPlans, Bf16ProductsTakeBf16TilesWhereTheTargetHasThem) {
  // A product of two bf16 operands widened to f32 (as the pipeline sums 16-bit products) reads
  // the bf16 buffers: one kernel, bf16 pair tiles on an AVX-512-BF16 target (before transposed
  // tiles), the f32 tiles without it, for f16 operands, and for a product of dot products.
  auto widened = [](const std::string& dtype, int64_t m, int64_t k, int64_t n, bool right_transposed) {
    std::string a = std::to_string(m) + "," + std::to_string(k), c = std::to_string(m) + "," + std::to_string(n);
    std::string b =
        right_transposed ? std::to_string(n) + "," + std::to_string(k) : std::to_string(k) + "," + std::to_string(n);
    std::string bk = std::to_string(k) + "," + std::to_string(n);
    return "func @main(%0: " + dtype + "[" + a + "], %1: " + dtype + "[" + b + "]) -> (f32[" + c + "]) {\n" +
           "  %2 = convert %0 : f32[" + a + "]\n  %3 = convert %1 : f32[" + b + "]\n" +
           (right_transposed ? "  %4 = transpose %3 {perm=[1,0]} : f32[" + bk + "]\n  %5 = matmul %2, %4 : f32[" + c +
                                   "]\n  return %5\n}"
                             : "  %4 = matmul %2, %3 : f32[" + c + "]\n  return %4\n}");
  };
  fx::cpu::Target bf16 = avx512();
  bf16.bf16_products = true;
  std::vector<KernelPlan> p = plans(widened("bf16", 32, 784, 128, false), bf16);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].strategy, Strategy::Bf16Tiles);
  EXPECT_EQ(p[0].tile, (Tile{8, 32, 256, 0, 0}));
  p = plans(widened("bf16", 32, 128, 784, true), bf16);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].strategy, Strategy::Bf16Tiles);
  EXPECT_EQ(plans(widened("bf16", 32, 128, 784, true), avx512())[0].strategy, Strategy::TransposedTiles);
  EXPECT_EQ(plans(widened("bf16", 32, 784, 128, false), avx512())[0].strategy, Strategy::Tiles);
  EXPECT_EQ(plans(widened("f16", 32, 784, 128, false), bf16)[0].strategy, Strategy::Tiles);
  EXPECT_EQ(plans(widened("bf16", 4, 64, 3, false), bf16)[0].strategy, Strategy::Tiles);
}
