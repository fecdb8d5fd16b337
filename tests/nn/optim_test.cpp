// Optimizers against steps computed here by hand, on every backend.
#include <gtest/gtest.h>

#include "common/test_names.h"
#include "nn/nn_test_util.h"

namespace nn = fluxion::nn;

class Optimizers : public BackendTest {
 protected:
  // Two updates of p with gradients g1 then g2; returns the parameters after each.
  std::pair<std::vector<double>, std::vector<double>> two_steps(const nn::Optimizer& opt, const std::vector<double>& p0,
                                                                const std::vector<double>& g1,
                                                                const std::vector<double>& g2) {
    auto update = jit([opt](const std::vector<Tensor>& p, const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      return opt.update(p, g, s);
    });
    fx::Shape shape{static_cast<int64_t>(p0.size())};
    std::vector<Array> p{make(DType::f32, p0, shape)};
    std::vector<Array> s = opt.init(p);
    auto [p1, s1] = update(p, std::vector<Array>{make(DType::f32, g1, shape)}, s);
    auto [p2, s2] = update(p1, std::vector<Array>{make(DType::f32, g2, shape)}, s1);
    return {p1[0].to_doubles(), p2[0].to_doubles()};
  }
  void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i]))) << i;
  }
};
FLUXION_INSTANTIATE_BACKENDS(Optimizers);

TEST_P(Optimizers, PlainSgd) {
  auto [a, b] = two_steps(nn::sgd({.lr = 0.1}), {1, -2}, {0.5, 1}, {-1, 2});
  expect_near(a, {0.95, -2.1});
  expect_near(b, {1.05, -2.3});
}

TEST_P(Optimizers, SgdMomentumNesterovAndWeightDecay) {
  // momentum 0.9: v1 = g1, p1 = p0 - lr v1; v2 = 0.9 v1 + g2, p2 = p1 - lr v2.
  auto [a, b] = two_steps(nn::sgd({.lr = 0.1, .momentum = 0.9}), {1}, {0.5}, {-1});
  expect_near(a, {0.95});
  expect_near(b, {0.95 - 0.1 * (0.45 - 1)});
  // Nesterov: the step uses g + 0.9 v.
  auto [c, d] = two_steps(nn::sgd({.lr = 0.1, .momentum = 0.9, .nesterov = true}), {1}, {0.5}, {-1});
  expect_near(c, {1 - 0.1 * (0.5 + 0.45)});
  double v2 = 0.45 - 1;
  expect_near(d, {c[0] - 0.1 * (-1 + 0.9 * v2)});
  // Weight decay 0.5 adds 0.5 p to the gradient.
  auto [e, f] = two_steps(nn::sgd({.lr = 0.1, .weight_decay = 0.5}), {2}, {0}, {0});
  expect_near(e, {2 - 0.1 * 1});
  expect_near(f, {1.9 - 0.1 * 0.95});
}

TEST_P(Optimizers, AdamWithBiasCorrection) {
  double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
  std::vector<double> p{1.0, -0.5}, g1{0.3, -2}, g2{-0.1, 1};
  std::vector<double> m(2, 0), v(2, 0), want1, want2;
  for (int t = 1; t <= 2; ++t) {
    const std::vector<double>& g = t == 1 ? g1 : g2;
    for (size_t i = 0; i < 2; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      double mh = m[i] / (1 - std::pow(b1, t)), vh = v[i] / (1 - std::pow(b2, t));
      p[i] -= lr * mh / (std::sqrt(vh) + eps);
    }
    (t == 1 ? want1 : want2) = p;
  }
  auto [a, b] = two_steps(nn::adam({.lr = lr}), {1.0, -0.5}, g1, g2);
  expect_near(a, want1);
  expect_near(b, want2);
}

TEST_P(Optimizers, AdamWDecaysTheWeightsDirectly) {
  // A zero gradient leaves m = v = 0: only the decoupled decay moves p, by lr * wd * p per step.
  auto [a, b] = two_steps(nn::adamw({.lr = 0.1, .weight_decay = 0.5}), {2}, {0}, {0});
  expect_near(a, {2 * (1 - 0.05)});
  expect_near(b, {2 * (1 - 0.05) * (1 - 0.05)});
  // Adam's weight decay instead goes through the moments: the first step moves p by ~lr.
  auto [c, d] = two_steps(nn::adam({.lr = 0.1, .weight_decay = 0.5}), {2}, {0}, {0});
  expect_near(c, {1.9});
  (void)d;
}

TEST(OptimizersState, NamesAndErrors) {
  std::vector<std::string> names{"w", "b"};
  EXPECT_EQ(nn::adam().state_names(names), (std::vector<std::string>{"adam.step", "adam.m.w", "adam.m.b", "adam.v.w", "adam.v.b"}));
  EXPECT_EQ(nn::sgd({.momentum = 0.9}).state_names(names), (std::vector<std::string>{"momentum.w", "momentum.b"}));
  EXPECT_TRUE(nn::sgd().state_names(names).empty());
  auto update = fx::jit([](const std::vector<Tensor>& p, const std::vector<Tensor>& g) { return nn::adam().update(p, g, {}).first; },
                        Backend::Interp);
  EXPECT_THROW(update(std::vector<Array>{Array(fx::f32, {2})}, std::vector<Array>{Array(fx::f32, {2})}), fx::Error);
}
