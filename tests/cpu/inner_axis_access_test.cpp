// Loop kernels that read or write along an inner axis at an offset: slices of a wider array
// (an LSTM's four gates in one [B, 4H] array) and concatenations along that axis. Their loads
// must stay consecutive vector loads, not gathers, and their values equal the interpreter's.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <sstream>
#include <string>
#include <vector>

#include "common/kernel_listing.h"
#include "common/test_util.h"
#include "cpu/cpu_checks.h"

namespace fx = fluxion;
using fx::testing::optimised_ir;
using fx::Array;
using fx::Tensor;

namespace {

Array uniform(const fx::Shape& shape, uint32_t seed) { return fx::testing::uniform_f32(shape, seed, 2); }

// The strategy of the kernel that computes the concatenation (its parts are materialized by
// kernels of their own: a concatenation is a view).
template <class F, class... A>
std::string concat_strategy(F f, const A&... args) {
  std::string text = fx::jit(f, fx::Backend::Cpu).lower(args...).kernels();
  std::vector<std::string> kernels = fx::testing::kernel_strategies(text);
  std::istringstream lines(text);
  size_t k = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("kernel ") == std::string::npos) continue;
    if (line.find("concat") != std::string::npos) return kernels.at(k);
    ++k;
  }
  return "no concat kernel in:\n" + text;
}

template <class F, class... A>
void expect_same_as_interpreter(F f, const A&... args) {
  fx::testing::expect_cpu_matches_interpreter(1e-6, f, args...);
}

// An LSTM cell's gates from one [B, 4H] array: four column slices at offsets 0, H, 2H, 3H.
Tensor gates(const Tensor& g, const Tensor& c) {
  int64_t H = c.dim(1);
  Tensor i = fx::sigmoid(fx::slice_axis(g, 1, 0, H)), f = fx::sigmoid(fx::slice_axis(g, 1, H, 2 * H));
  Tensor u = fx::tanh(fx::slice_axis(g, 1, 2 * H, 3 * H)), o = fx::sigmoid(fx::slice_axis(g, 1, 3 * H, 4 * H));
  return o * fx::tanh(f * c + i * u);
}

}  // namespace

TEST(InnerAxisAccess, ColumnSlicesAtAnOffsetAreConsecutiveLoads) {
  Array g = uniform({16, 256}, 1), c = uniform({16, 64}, 2);
  std::string ir = optimised_ir(gates, g, c);
  ASSERT_NE(ir.find("define"), std::string::npos) << "no LLVM IR was dumped";
  EXPECT_EQ(ir.find("masked.gather"), std::string::npos) << ir;
  expect_same_as_interpreter(gates, g, c);
}

TEST(InnerAxisAccess, AConcatenationAlongAnInnerAxisRunsPartByPart) {
  auto joined = [](const Tensor& a, const Tensor& b) { return fx::concat({a * 2.0f, fx::exp(b), a - 1.0f}, 1); };
  Array a = uniform({12, 40}, 3), b = uniform({12, 24}, 4);
  EXPECT_EQ(concat_strategy(joined, a, b), "loop[pieces]");
  EXPECT_EQ(optimised_ir(joined, a, b).find("masked.gather"), std::string::npos);
  expect_same_as_interpreter(joined, a, b);
}

TEST(InnerAxisAccess, AConcatenationAlongTheOuterAxisKeepsItsNest) {
  // Threads split dimension 0: a concatenation along it is read element by element.
  auto joined = [](const Tensor& a, const Tensor& b) { return fx::concat({a, b * b}, 0); };
  Array a = uniform({5, 33}, 5), b = uniform({7, 33}, 6);
  EXPECT_EQ(concat_strategy(joined, a, b), "loop[nest]");
  expect_same_as_interpreter(joined, a, b);
}
