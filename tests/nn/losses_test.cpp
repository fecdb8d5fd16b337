// Losses and metrics on every backend: values against formulas computed here in double,
// stability for large logits, gradients against finite differences.
#include <gtest/gtest.h>

#include "common/test_names.h"
#include "nn/nn_test_util.h"

namespace nn = fluxion::nn;

class Losses : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Losses);

namespace {

double reference_cross_entropy(const std::vector<double>& logits, const std::vector<int>& labels, size_t classes) {
  double total = 0;
  for (size_t r = 0; r < labels.size(); ++r) {
    double m = -1e300, s = 0;
    for (size_t c = 0; c < classes; ++c) m = std::max(m, logits[r * classes + c]);
    for (size_t c = 0; c < classes; ++c) s += std::exp(logits[r * classes + c] - m);
    total += std::log(s) + m - logits[r * classes + static_cast<size_t>(labels[r])];
  }
  return total / static_cast<double>(labels.size());
}

}  // namespace

TEST_P(Losses, SoftmaxCrossEntropyMatchesTheFormula) {
  std::vector<double> logits = random_doubles(12, -3, 3, 1);
  std::vector<int> labels{2, 0, 3};
  Array l = make(DType::f32, logits, {3, 4}), y = make(DType::i32, {2, 0, 3}, {3});
  double got = jit([](Tensor a, Tensor b) { return nn::softmax_cross_entropy(a, b); })(l, y).item();
  EXPECT_NEAR(got, reference_cross_entropy(round_all(DType::f32, logits), labels, 4), 1e-5);
}

TEST_P(Losses, SoftmaxCrossEntropyIsStableForLargeLogits) {
  Array l = make(DType::f32, {1000, 0, -1000, 0, 1000, 999}, {2, 3}), y = make(DType::i32, {0, 2}, {2});
  auto [value, grads] = jit(fx::value_and_grad([](Tensor a, Tensor b) { return nn::softmax_cross_entropy(a, b); }))(l, y);
  // Row 0 is certain (loss 0); row 1's label is 1 below the largest logit: 1 + log(1 + 1/e).
  // An f32 ulp at 1000 is 6e-5, hence the tolerance.
  EXPECT_NEAR(value.item(), (1 + std::log(1 + std::exp(-1.0))) / 2, 2e-4);
  for (double g : grads[0].to_doubles()) EXPECT_TRUE(std::isfinite(g));
}

TEST_P(Losses, CrossEntropyGradientIsSoftmaxMinusOneHot) {
  FLUXION_REQUIRE_F64(backend());
  expect_gradients_match(
      backend(), [](Tensor l) { return nn::softmax_cross_entropy(l, fx::constant(make(DType::i32, {1, 0}, {2}))); },
      uniform64({2, 3}, -2, 2, 3));
  expect_gradients_match(backend(), [](Tensor l, Tensor p) { return nn::softmax_cross_entropy_probs(l, p); },
                         uniform64({2, 3}, -2, 2, 4), uniform64({2, 3}, 0, 1, 5));
}

TEST_P(Losses, SequenceLogitsTakeLabelsOfOneRankLess) {
  // [B, T, C] logits and [B, T] labels, as the character model uses.
  std::vector<double> logits = random_doubles(2 * 3 * 4, -2, 2, 6);
  Array l = make(DType::f32, logits, {2, 3, 4}), y = make(DType::i32, {0, 1, 2, 3, 3, 1}, {2, 3});
  double got = jit([](Tensor a, Tensor b) { return nn::softmax_cross_entropy(a, b); })(l, y).item();
  EXPECT_NEAR(got, reference_cross_entropy(round_all(DType::f32, logits), {0, 1, 2, 3, 3, 1}, 4), 1e-5);
}

TEST_P(Losses, BinaryCrossEntropyFromLogitsAndProbabilities) {
  FLUXION_REQUIRE_F64(backend());
  std::vector<double> x{-50, -1, 0, 2, 60}, t{0, 1, 0.5, 1, 0};
  double want = 0;
  for (size_t i = 0; i < x.size(); ++i) want += std::max(x[i], 0.0) - x[i] * t[i] + std::log1p(std::exp(-std::abs(x[i])));
  want /= 5;
  Array xa = make(DType::f32, x, {5}), ta = make(DType::f32, t, {5});
  EXPECT_NEAR(jit([](Tensor a, Tensor b) { return nn::binary_cross_entropy_with_logits(a, b); })(xa, ta).item(), want,
              1e-5 * want);
  Array p = make(DType::f32, {0.2, 0.9}, {2}), y = make(DType::f32, {0, 1}, {2});
  EXPECT_NEAR(jit([](Tensor a, Tensor b) { return nn::binary_cross_entropy(a, b); })(p, y).item(),
              -(std::log(0.8) + std::log(0.9)) / 2, 1e-5);
  expect_gradients_match(backend(), [](Tensor a, Tensor b) { return nn::binary_cross_entropy_with_logits(a, b); },
                         uniform64({4}, -3, 3, 7), uniform64({4}, 0, 1, 8));
}

TEST_P(Losses, MseLogSoftmaxAndAccuracy) {
  Array a = make(DType::f32, {1, 2, 3}, {3}), b = make(DType::f32, {1, 0, 5}, {3});
  EXPECT_NEAR(jit([](Tensor x, Tensor y) { return nn::mse(x, y); })(a, b).item(), 8.0 / 3, 1e-6);
  Array ls = jit([](Tensor x) { return fx::exp(nn::log_softmax(x)); })(make(DType::f32, {0, std::log(3.0)}, {2}));
  EXPECT_TRUE(matches(ls, {2}, {0.25, 0.75}));
  Array logits = make(DType::f32, {0.1, 0.9, 0.8, 0.2, 0.3, 0.4}, {3, 2}), labels = make(DType::i32, {1, 1, 1}, {3});
  auto [acc, n] = jit([](Tensor l, Tensor y) { return std::make_pair(nn::accuracy(l, y), nn::correct_count(l, y)); })(logits, labels);
  EXPECT_NEAR(acc.item(), 2.0 / 3, 1e-6);
  EXPECT_EQ(n.item(), 2);
}

TEST(LossesErrors, MismatchedOperandsRaiseErrors) {
  auto run_interp = [](auto f, const Array& a, const Array& b) { fx::jit(f, Backend::Interp)(a, b); };
  auto ce = [](Tensor a, Tensor b) { return nn::softmax_cross_entropy(a, b); };
  EXPECT_THROW(run_interp(ce, Array(fx::f32, {3, 4}), Array(fx::i32, {4})), fx::Error);
  EXPECT_THROW(run_interp(ce, Array(fx::f32, {3, 4}), Array(fx::f32, {3})), fx::Error);
  EXPECT_THROW(run_interp([](Tensor a, Tensor b) { return nn::mse(a, b); }, Array(fx::f32, {3}), Array(fx::f32, {4})),
               fx::Error);
}
