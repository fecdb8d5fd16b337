// Reductions laid out for a GPU: split across workgroups when one row per kept index would
// leave the device idle (a fixed partition, combined in a fixed order), and interleaved across
// neighbouring invocations when neighbouring rows are neighbours in memory (column sums).
// Values are checked against the double-precision sum, and repeated runs bitwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <fluxion/fluxion.h>

#include "backends/vulkan/plan.h"
#include "common/kernel_listing.h"
#include "common/scoped_env.h"
#include "common/test_util.h"
#include "ir/ir.h"
#include "vulkan/require_vulkan.h"

namespace fx = fluxion;
using fx::testing::ScopedEnv;

namespace {

fx::Array uniform(fx::Shape s, uint32_t seed) {
  std::vector<double> v = fx::testing::random_doubles(fx::testing::count(s), -1, 1, seed);
  return fx::Array(std::vector<float>(v.begin(), v.end()), std::move(s));
}

// The sums over `axis` (-1: all) of x's squares in double precision, x of shape [rows, cols].
std::vector<double> squares_summed(const fx::Array& x, int64_t rows, int64_t cols, int axis) {
  std::vector<double> v = x.to_doubles();
  std::vector<double> out(axis < 0 ? 1 : static_cast<size_t>(axis == 0 ? cols : rows), 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      double s = v[static_cast<size_t>(i * cols + j)];
      out[axis < 0 ? 0 : static_cast<size_t>(axis == 0 ? j : i)] += s * s;
    }
  }
  return out;
}

std::vector<std::string> kinds(const std::string& listing) { return fx::testing::kernel_strategies(listing); }

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double relative) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], relative * (1 + std::abs(want[i]))) << i;
}

}  // namespace

TEST(VulkanReductionSplit, AWholeSumIsSplitIntoPartsAndCombinedInAFixedOrder) {
  REQUIRE_VULKAN();
  for (const char* device_class : {"cpu", "gpu"}) {
    ScopedEnv tuning("FLUXION_VULKAN_TUNING", device_class);
    auto f = [](fx::Tensor x) { return fx::sum(x * x); };
    fx::Array x = uniform({512, 1024}, 3);
    auto compiled = fx::jit(f, fx::Backend::Vulkan);
    std::string listing = compiled.lower(x).kernels();
    // The squares are computed inside the partial sums; the parts are summed by a second kernel.
    std::vector<std::string> k = kinds(listing);
    ASSERT_EQ(k.size(), 2u) << device_class << "\n" << listing;
    EXPECT_NE(listing.find("mul"), std::string::npos) << listing;
    fx::Array first = compiled(x);
    expect_near_all(first.to_doubles(), squares_summed(x, 512, 1024, -1), 1e-5);
    EXPECT_EQ(compiled(x).to_doubles(), first.to_doubles()) << "a split sum changed between runs";
  }
}

TEST(VulkanReductionSplit, MaxMinAndIntegerSumsSplitAlike) {
  REQUIRE_VULKAN();
  ScopedEnv tuning("FLUXION_VULKAN_TUNING", "cpu");
  fx::Array x = uniform({64, 4096}, 5);
  std::vector<double> v = x.to_doubles();
  auto most = fx::jit([](fx::Tensor a) { return fx::max(a); }, fx::Backend::Vulkan);
  auto least = fx::jit([](fx::Tensor a) { return fx::min(a); }, fx::Backend::Vulkan);
  EXPECT_EQ(kinds(most.lower(x).kernels()).size(), 2u) << most.lower(x).kernels();
  EXPECT_EQ(most(x).to_doubles()[0], *std::max_element(v.begin(), v.end()));
  EXPECT_EQ(least(x).to_doubles()[0], *std::min_element(v.begin(), v.end()));
  std::vector<int32_t> ints(64 * 4096);
  int64_t want = 0;
  for (size_t i = 0; i < ints.size(); ++i) want += ints[i] = static_cast<int32_t>(i % 97) - 40;
  fx::Array n(ints, {64, 4096});
  auto total = fx::jit([](fx::Tensor a) { return fx::sum(a); }, fx::Backend::Vulkan);
  EXPECT_EQ(kinds(total.lower(n).kernels()).size(), 2u);
  EXPECT_EQ(total(n).to_doubles()[0], static_cast<double>(want));
}

TEST(VulkanReductionSplit, ExtentsWithoutAGoodDivisorStayWhole) {
  REQUIRE_VULKAN();
  ScopedEnv tuning("FLUXION_VULKAN_TUNING", "cpu");
  fx::Array x = uniform({65537}, 9);  // a prime extent: no parts of equal size
  auto f = fx::jit([](fx::Tensor a) { return fx::sum(a * a); }, fx::Backend::Vulkan);
  EXPECT_EQ(kinds(f.lower(x).kernels()).size(), 1u);
  expect_near_all(f(x).to_doubles(), squares_summed(x, 1, 65537, -1), 1e-5);
}

TEST(VulkanReductionSplit, ColumnSumsInterleaveRowsOnTheGpuClass) {
  REQUIRE_VULKAN();
  ScopedEnv tuning("FLUXION_VULKAN_TUNING", "gpu");
  // 300 columns (not a multiple of the 32 interleaved rows) of 77 rows, and of 20,000 rows,
  // which is also split into parts.
  for (int64_t rows : {77, 20000}) {
    fx::Array x = uniform({rows, 300}, 11);
    auto f = fx::jit([](fx::Tensor a) { return fx::sum(a * a, {0}); }, fx::Backend::Vulkan);
    std::string listing = f.lower(x).kernels();
    EXPECT_EQ(kinds(listing)[0], "loop[interleaved-rows]") << listing;
    expect_near_all(f(x).to_doubles(), squares_summed(x, rows, 300, 0), 1e-5);
    auto by_rows = fx::jit([](fx::Tensor a) { return fx::sum(a * a, {1}); }, fx::Backend::Vulkan);
    expect_near_all(by_rows(x).to_doubles(), squares_summed(x, rows, 300, 1), 1e-5);
  }
}

TEST(VulkanReductionSplit, BroadcastOperandsAreCutWithTheirReader) {
  REQUIRE_VULKAN();
  ScopedEnv tuning("FLUXION_VULKAN_TUNING", "gpu");
  const int64_t rows = 20000, cols = 300;
  fx::Array x = uniform({rows, cols}, 13), b = uniform({cols}, 14), c = uniform({rows, 1}, 15);
  auto f = fx::jit([](fx::Tensor a, fx::Tensor shift, fx::Tensor scale) { return fx::sum((a - shift) * scale, {0}); },
                   fx::Backend::Vulkan);
  std::string listing = f.lower(x, b, c).kernels();
  // A broadcast along the cut axis and one across it: still one partial kernel and the combine.
  EXPECT_EQ(kinds(listing).size(), 2u) << listing;
  std::vector<double> xv = x.to_doubles(), bv = b.to_doubles(), cv = c.to_doubles(), want(cols, 0.0),
                      magnitude(cols, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      size_t at = static_cast<size_t>(j);
      double term = (xv[static_cast<size_t>(i * cols + j)] - bv[at]) * cv[static_cast<size_t>(i)];
      want[at] += term;
      magnitude[at] += std::abs(term);
    }
  }
  // f32 sums of 20,000 terms of both signs cancel to results far smaller than the terms, so the
  // bound is a tree sum's, about log2(20,000) x 2^-24 of the terms' magnitudes (~1e-6); a part
  // left out or counted twice would be off by the part's sum, tens here.
  std::vector<double> got = f(x, b, c).to_doubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(got[j], want[j], 1e-6 * magnitude[j]) << j;
}

// Products of few output tiles and a long k are split over k on the GPU class (split-K): a
// batched product over parts of k, then the sum of the parts, with the operands read through
// views (no copy kernels) and any epilogue after the sum.
TEST(VulkanReductionSplit, LongProductsOfFewTilesAreSplitOverK) {
  REQUIRE_VULKAN();
  ScopedEnv tuning("FLUXION_VULKAN_TUNING", "gpu");
  struct Case {
    const char* what;
    std::function<fx::Tensor(fx::Tensor, fx::Tensor)> f;
    fx::Shape a, b;
    size_t kernels;
  };
  std::vector<Case> cases{
      {"an MLP layer", [](fx::Tensor a, fx::Tensor b) { return fx::matmul(a, b); }, {32, 784}, {784, 128}, 2},
      {"a weight gradient",
       [](fx::Tensor a, fx::Tensor b) { return fx::matmul(fx::transpose(a), b); },
       {4096, 32},
       {4096, 48},
       2},
      {"batched, with an epilogue",
       [](fx::Tensor a, fx::Tensor b) { return fx::tanh(fx::matmul(a, b)) * 2.0f; },
       {3, 20, 512},
       {3, 512, 30},
       3},
  };
  for (const Case& c : cases) {
    fx::Array a = uniform(c.a, 21), b = uniform(c.b, 22);
    auto f = fx::jit(c.f, fx::Backend::Vulkan);
    std::string listing = f.lower(a, b).kernels();
    std::vector<std::string> k = kinds(listing);
    ASSERT_EQ(k.size(), c.kernels) << c.what << "\n" << listing;
    EXPECT_EQ(k[0], "matmul[tiles]") << c.what << "\n" << listing;
    EXPECT_EQ(k[1], "loop[interleaved-rows]") << c.what << "\n" << listing;
    std::vector<double> want = fx::jit(c.f, fx::Backend::Interp)(a, b).to_doubles();
    expect_near_all(f(a, b).to_doubles(), want, 1e-4);
  }
}

TEST(VulkanReductionSplit, EmptyReductionsAreLeftAlone) {
  fx::ir::Program p = fx::ir::parse(R"(func @main(%0: f32[0,70000]) -> (f32[70000], f32[0]) {
  %1 = reduce_sum %0 {axes=[0]} : f32[70000]
  %2 = reduce_sum %0 {axes=[1]} : f32[0]
  return %1, %2
})");
  EXPECT_FALSE(fx::vulkan::split_reductions(p.body, fx::vulkan::DeviceTuning{}));
}

TEST(VulkanReductionSplit, TheRewriteKeepsTheProgramWellFormed) {
  fx::ir::Program p = fx::ir::parse(R"(func @main(%0: f32[6,4096,8]) -> (f32[8], f32[6,8]) {
  %1 = reduce_sum %0 {axes=[0,1]} : f32[8]
  %2 = reduce_max %0 {axes=[1]} : f32[6,8]
  return %1, %2
})");
  fx::vulkan::DeviceTuning tuning;
  tuning.fill_invocations = 1 << 14;
  tuning.min_part_elements = 1024;
  ASSERT_TRUE(fx::vulkan::split_reductions(p.body, tuning));
  fx::ir::verify(p);
  std::string text = fx::ir::print(p);
  // [6,4096] folded for 8 kept: the axis of 4096 is cut (6 has no divisor as large).
  EXPECT_NE(text.find("reshape %0 : f32[6,"), std::string::npos) << text;
  fx::vulkan::DeviceTuning filled;
  filled.fill_invocations = 1;
  fx::ir::Program q = fx::ir::parse(fx::ir::print(p));
  EXPECT_FALSE(fx::vulkan::split_reductions(q.body, filled)) << "a device already filled splits nothing";
}
