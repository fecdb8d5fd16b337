// Reductions along a row (a softmax's sum, a bias gradient) vectorise together with the math
// functions beside them, in loop kernels and in a matrix product's epilogue: their optimised IR
// calls a libmvec vector variant inside the kernel, and their values equal the interpreter's.
// A pooling window's loops are unrolled, and a narrow panel is packed with vector loads.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <regex>
#include <string>

#include "cpu/cpu_checks.h"
#include "cpu/strategies.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;

namespace {

// Kernel 0 of f's program calls a vector variant of a math function (`<N x float> @_ZGV...`).
template <class F, class... A>
void expect_vector_math_in_kernel0(F f, const A&... args) {
  std::string kernel = fx::testing::kernel0_ir(fx::testing::optimised_ir(f, args...));
  ASSERT_FALSE(kernel.empty()) << "no kernel0 in the dumped IR";
  EXPECT_NE(kernel.find(" x float> @_ZGV"), std::string::npos) << kernel;
}

}  // namespace

TEST(VectorisedReductions, ARowSumOfExpInALoopKernel) {
  auto f = [](Tensor x) { return fx::sum(fx::exp(x), {1}); };
  Array x = fx::testing::uniform_f32({64, 200}, 1);
  expect_vector_math_in_kernel0(f, x);
  fx::testing::expect_cpu_matches_interpreter(1e-5, f, x);
}

TEST(VectorisedReductions, RowSumsInAMatrixProductsEpilogue) {
  auto f = [](Tensor w, Tensor x) {
    Tensor g = fx::exp(fx::matmul(w, x) * 0.1);
    return fx::concat({fx::reshape(g, {-1}), fx::sum(g, {1}), fx::sum(fx::tanh(g), {1})}, 0);
  };
  Array w = fx::testing::uniform_f32({24, 40}, 2), x = fx::testing::uniform_f32({40, 300}, 3);
  expect_vector_math_in_kernel0(f, w, x);
  fx::testing::expect_cpu_matches_interpreter(1e-5, f, w, x);
}

// A pooling window's taps are written out (kernel modules unroll only the loops their emitter
// marks): a 2 x 2 window's kernel compares four taps, not one tap in a loop of four.
TEST(VectorisedReductions, AMaxPoolsWindowIsUnrolled) {
  auto f = [](Tensor x) { return fx::max_pool2d(x); };
  Array x = fx::testing::uniform_f32({16, 6, 24, 24}, 4);
  std::string kernel = fx::testing::kernel0_ir(fx::testing::optimised_ir(f, x));
  ASSERT_FALSE(kernel.empty()) << "no kernel0 in the dumped IR";
  size_t compares = 0;
  for (size_t at = kernel.find("fcmp ogt"); at != std::string::npos; at = kernel.find("fcmp ogt", at + 1)) ++compares;
  EXPECT_GE(compares, 4u) << kernel;
  fx::testing::expect_cpu_matches_interpreter(0, f, x);
}

// A product's last panel, narrower than the others, is packed by a short loop over its columns
// that is unrolled (kernel modules unroll only small innermost loops of constant bounds), so
// that its columns load as a vector: no vector is built element by element (a gather).
TEST(VectorisedReductions, ANarrowPanelIsPackedWithoutGathers) {
  int64_t lanes = fx::testing::matmul_lanes(fx::f32);
  auto f = [](Tensor a, Tensor b) { return fx::matmul(a, b); };
  Array a = fx::testing::uniform_f32({40, 600}, 5), b = fx::testing::uniform_f32({600, 5 * lanes}, 6);
  std::string kernel = fx::testing::kernel0_ir(fx::testing::optimised_ir(f, a, b));
  ASSERT_FALSE(kernel.empty()) << "no kernel0 in the dumped IR";
  std::regex gather("insertelement <[0-9]+ x float> %[^,]+, float %[^,]+, i64 [1-9]");
  EXPECT_FALSE(std::regex_search(kernel, gather)) << kernel;
  fx::testing::expect_cpu_matches_interpreter(1e-5, f, a, b);
}
