// What the fuser makes of the workloads: the number of kernels and the graph ops in each
// (docs/kernels.md states the rules these follow).
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include "common/test_util.h"
#include "cpu/lstm_cell.h"

#include <cmath>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;

namespace {

// The kernel lines of a listing without the backend's plan ("matmul[tiles] ... | tile ..." ->
// "matmul ..."): what the fuser decided, the same whatever the machine's vector width.
std::vector<std::string> lines(const std::string& s) {
  static const std::regex strategy(R"(^(kernel [0-9]+ [a-z]+)\[[a-z-]+\])");
  static const std::regex details(R"( \| .*$)");
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) {
    if (!l.empty()) out.push_back(std::regex_replace(std::regex_replace(l, strategy, "$1"), details, ""));
  }
  return out;
}

Tensor mlp(Tensor W1, Tensor b1, Tensor W2, Tensor b2, Tensor x) {
  Tensor h = fx::tanh(fx::matmul(W1, fx::reshape(x, {784, 128})) + b1);
  Tensor y = fx::matmul(W2, h) + b2;
  return fx::sum(y * y);
}

}  // namespace

TEST(Fusion, W1ValueAndGradIsOneKernel) {
  auto f = fx::jit(fx::value_and_grad([](Tensor x) { return fx::sum(x * x); }), fx::Backend::Cpu);
  auto k = lines(f.lower(Array(fx::f32, {28, 28, 1, 128})).kernels());
  ASSERT_EQ(k.size(), 1u) << f.lower(Array(fx::f32, {28, 28, 1, 128})).kernels();
  EXPECT_EQ(k[0], "kernel 0 loop [28,28,1,128]: mul reduce_sum mul add");
}

TEST(Fusion, W3ForwardAndBackwardAreFiveMatmulKernelsWithEpilogues) {
  auto f = fx::jit(fx::value_and_grad(mlp, {0, 1, 2, 3}), fx::Backend::Cpu);
  std::string text = f.lower(Array(fx::f32, {32, 784}), Array(fx::f32, {32, 1}), Array(fx::f32, {10, 32}),
                             Array(fx::f32, {10, 1}), Array(fx::f32, {28, 28, 1, 128}))
                         .kernels();
  auto k = lines(text);
  ASSERT_EQ(k.size(), 5u) << text;
  // Bias and tanh are the first matmul's epilogue; tanh's derivative factor 1 - h * h is
  // recomputed from the stored h where the backward pass uses it, not stored.
  EXPECT_EQ(k[0], "kernel 0 matmul [32,128] parallel: matmul add tanh") << text;
  // The loss, its seed gradient and b2's gradient ride on the second matmul.
  EXPECT_EQ(k[1], "kernel 1 matmul [10,128]: matmul add mul reduce_sum mul add reduce_sum") << text;
  EXPECT_EQ(k[2], "kernel 2 matmul [10,32] parallel: matmul") << text;
  EXPECT_EQ(k[3], "kernel 3 matmul [32,128] parallel: matmul mul reduce_sum (recomputes mul sub)") << text;
  EXPECT_EQ(k[4], "kernel 4 matmul [32,784] parallel: matmul") << text;
  // The data's adjoint is never computed: no kernel has the shape of x.
  EXPECT_EQ(text.find("[784,128]"), std::string::npos) << text;
}

TEST(Fusion, LstmCellGatesAreOneKernelAfterTheMatmuls) {
  auto f = fx::jit([](Tensor Wx, Tensor Wh, Tensor b, Tensor x, Tensor h, Tensor c) {
    return fx::testing::lstm_cell(Wx, Wh, b, x, h, c);
  }, fx::Backend::Cpu);
  std::string text = f.lower(Array(fx::f32, {256, 64}), Array(fx::f32, {256, 64}), Array(fx::f32, {256, 1}),
                             Array(fx::f32, {64, 32}), Array(fx::f32, {64, 32}), Array(fx::f32, {64, 32}))
                         .kernels();
  auto k = lines(text);
  // Two matmuls (the second with the sum and bias as epilogue), then every gate op in one kernel,
  // in the IR's canonical order (each gate just before its first use).
  ASSERT_EQ(k.size(), 3u) << text;
  EXPECT_EQ(k[1], "kernel 1 matmul [256,32] parallel: matmul add add") << text;
  EXPECT_EQ(k[2], "kernel 2 loop [64,32] parallel: sigmoid sigmoid mul sigmoid tanh mul add tanh mul") << text;
}

TEST(Fusion, CheapValuesAreRecomputedExpensiveOnesStored) {
  // a*b is cheap: the second kernel (after the reduction) recomputes it. exp(a) is stored.
  auto f = fx::jit([](Tensor a, Tensor b) {
    Tensor p = a * b;
    Tensor e = fx::exp(a);
    Tensor m = fx::max(p + e, {1}, true);
    return (p - m) * e;
  }, fx::Backend::Cpu);
  std::string text = f.lower(Array(fx::f32, {8, 16}), Array(fx::f32, {8, 16})).kernels();
  auto k = lines(text);
  ASSERT_EQ(k.size(), 2u) << text;
  EXPECT_NE(k[1].find("(recomputes mul)"), std::string::npos) << text;
  EXPECT_EQ(k[1].find("exp"), std::string::npos) << text;
  auto r = f(Array(std::vector<float>(128, 0.5f), {8, 16}), Array(std::vector<float>(128, 2.0f), {8, 16}));
  float e = std::exp(0.5f);
  EXPECT_NEAR(r.to_vector<float>()[5], (1.0f - (1.0f + e)) * e, 1e-5);
}

TEST(Fusion, ADenseWeightGradientIsComputedInTheWeightsLayout) {
  // y = x W^T: W's gradient transpose(x^T dy) is computed as dy^T x, straight into W's [out, in]
  // layout, not as [in, out] and then copied transposed.
  auto loss = [](Tensor W, Tensor x) { return fx::sum(fx::tanh(fx::matmul(x, fx::transpose(W)))); };
  auto f = fx::jit(fx::grad(loss, {0}), fx::Backend::Cpu);
  Array W = fx::testing::make(fx::f32, fx::testing::random_doubles(16 * 32, -1, 1, 7), {16, 32});
  Array x = fx::testing::make(fx::f32, fx::testing::random_doubles(64 * 32, -1, 1, 8), {64, 32});
  std::string text = f.lower(W, x).kernels();
  auto k = lines(text);
  ASSERT_EQ(k.size(), 2u) << text;
  EXPECT_EQ(k[1].rfind("kernel 1 matmul [16,32]", 0), 0u) << text;
  EXPECT_EQ(text.find("transpose"), std::string::npos) << text;
  std::vector<double> got = f(W, x)[0].to_doubles();
  std::vector<double> want = fx::jit(fx::grad(loss, {0}), fx::Backend::Interp)(W, x)[0].to_doubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}
