// Optimizers against steps computed here by hand, on every backend.
#include <gtest/gtest.h>

#include "common/test_names.h"
#include "nn/nn_test_util.h"

namespace nn = fluxion::nn;

class Optimizers : public BackendTest {
 protected:
  // Updates of p with each gradient in turn (one parameter vector); the parameters after each.
  std::vector<std::vector<double>> steps(const nn::Optimizer& opt, const std::vector<double>& p0,
                                         const std::vector<std::vector<double>>& grads) {
    auto update = jit([opt](const std::vector<Tensor>& p, const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
      return opt.update(p, g, s);
    });
    fx::Shape shape{static_cast<int64_t>(p0.size())};
    std::vector<Array> p{make(DType::f32, p0, shape)};
    std::vector<Array> s = opt.init(p);
    std::vector<std::vector<double>> out;
    for (const std::vector<double>& g : grads) {
      std::tie(p, s) = update(p, std::vector<Array>{make(DType::f32, g, shape)}, s);
      out.push_back(p[0].to_doubles());
    }
    return out;
  }
  std::pair<std::vector<double>, std::vector<double>> two_steps(const nn::Optimizer& opt, const std::vector<double>& p0,
                                                                const std::vector<double>& g1,
                                                                const std::vector<double>& g2) {
    std::vector<std::vector<double>> r = steps(opt, p0, {g1, g2});
    return {r[0], r[1]};
  }
  void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * std::max(1.0, std::abs(want[i]))) << i;
  }
  // Three steps of `opt` against `reference`, which updates (p, g) in double precision keeping
  // its own state, with PyTorch's formulas.
  template <class Reference>
  void expect_like_reference(const nn::Optimizer& opt, Reference reference) {
    std::vector<double> p{1.0, -0.5, 0.25};
    std::vector<std::vector<double>> grads{{0.3, -2, 0.01}, {-0.1, 1, 0.02}, {0.5, 0.5, -0.03}};
    std::vector<std::vector<double>> got = steps(opt, p, grads);
    for (size_t t = 0; t < grads.size(); ++t) {
      reference(p, grads[t], static_cast<int>(t) + 1);
      SCOPED_TRACE("step " + std::to_string(t + 1));
      expect_near(got[t], p);
    }
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

TEST_P(Optimizers, RmsPropWithAndWithoutMomentum) {
  for (double momentum : {0.0, 0.9}) {
    SCOPED_TRACE(momentum);
    std::vector<double> v(3, 0), buf(3, 0);
    expect_like_reference(nn::rmsprop({.lr = 0.01, .alpha = 0.9, .momentum = momentum, .weight_decay = 0.1}),
                          [&](std::vector<double>& p, const std::vector<double>& g, int) {
                            for (size_t i = 0; i < p.size(); ++i) {
                              double gi = g[i] + 0.1 * p[i];
                              v[i] = 0.9 * v[i] + 0.1 * gi * gi;
                              double step = gi / (std::sqrt(v[i]) + 1e-8);
                              buf[i] = momentum * buf[i] + step;
                              p[i] -= 0.01 * (momentum != 0 ? buf[i] : step);
                            }
                          });
  }
}

TEST_P(Optimizers, Adagrad) {
  std::vector<double> sum(3, 0.1);
  expect_like_reference(nn::adagrad({.lr = 0.1, .initial_accumulator = 0.1}),
                        [&](std::vector<double>& p, const std::vector<double>& g, int) {
                          for (size_t i = 0; i < p.size(); ++i) {
                            sum[i] += g[i] * g[i];
                            p[i] -= 0.1 * g[i] / (std::sqrt(sum[i]) + 1e-10);
                          }
                        });
}

TEST_P(Optimizers, Lion) {
  std::vector<double> m(3, 0);
  expect_like_reference(nn::lion({.lr = 0.01, .beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.5}),
                        [&](std::vector<double>& p, const std::vector<double>& g, int) {
                          for (size_t i = 0; i < p.size(); ++i) {
                            double c = 0.9 * m[i] + 0.1 * g[i];
                            double sign = c > 0 ? 1 : c < 0 ? -1 : 0;
                            p[i] -= 0.01 * (sign + 0.5 * p[i]);
                            m[i] = 0.99 * m[i] + 0.01 * g[i];
                          }
                        });
}

TEST_P(Optimizers, ClipByGlobalNormThenAdamThenScheduleIsOneChain) {
  // clip -> adam -> lr * 0.5^floor(t / 2): PyTorch's clip_grad_norm_, Adam and StepLR.
  nn::Optimizer opt = nn::chain(
      {nn::clip_by_global_norm(1.0), nn::scale_by_adam(), nn::scale_by_learning_rate(0.1, nn::Schedule::step(2, 0.5))});
  std::vector<double> m(3, 0), v(3, 0);
  expect_like_reference(opt, [&](std::vector<double>& p, const std::vector<double>& g0, int t) {
    double norm = 0;
    for (double x : g0) norm += x * x;
    double coef = std::min(1.0, 1.0 / (std::sqrt(norm) + 1e-6));
    double lr = 0.1 * std::pow(0.5, (t - 1) / 2);
    for (size_t i = 0; i < p.size(); ++i) {
      double g = g0[i] * coef;
      m[i] = 0.9 * m[i] + 0.1 * g;
      v[i] = 0.999 * v[i] + 0.001 * g * g;
      p[i] -= lr * (m[i] / (1 - std::pow(0.9, t))) / (std::sqrt(v[i] / (1 - std::pow(0.999, t))) + 1e-8);
    }
  });
}

TEST_P(Optimizers, ClipByValue) {
  auto r = steps(nn::chain({nn::clip_by_value(0.5), nn::scale_by_learning_rate(1)}), {0, 0, 0}, {{2, -0.25, -3}});
  expect_near(r[0], {-0.5, 0.25, 0.5});
}

TEST_P(Optimizers, WeightDecayMaskSkipsVectors) {
  // A matrix is decayed, a vector (a bias) is not: zero gradients move only the matrix.
  nn::Optimizer opt = nn::adamw({.lr = 0.1, .weight_decay = 0.5, .decay_mask = nn::matrices_only()});
  auto update = jit([opt](const std::vector<Tensor>& p, const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
    return opt.update(p, g, s, {"weight", "bias"});
  });
  std::vector<Array> p{make(DType::f32, {2, 2, 2, 2}, {2, 2}), make(DType::f32, {2, 2}, {2})};
  std::vector<Array> g{Array(fx::f32, {2, 2}), Array(fx::f32, {2})};
  auto [next, state] = update(p, g, opt.init(p));
  expect_near(next[0].to_doubles(), std::vector<double>(4, 2 * (1 - 0.05)));
  expect_near(next[1].to_doubles(), {2, 2});
}

TEST_P(Optimizers, SchedulesOnTheDeviceMatchTheirFormulas) {
  const double pi = std::acos(-1.0);
  struct Case {
    nn::Schedule schedule;
    std::function<double(int)> want;
  };
  std::vector<Case> cases{
      {nn::Schedule(), [](int) { return 1.0; }},
      {nn::Schedule::step(3, 0.5), [](int s) { return std::pow(0.5, s / 3); }},
      {nn::Schedule::exponential(0.9), [](int s) { return std::pow(0.9, s); }},
      {nn::Schedule::warmup_cosine(4, 12, 0.1, 0.2),
       [pi](int s) {
         if (s < 4) return 0.2 + 0.8 * s / 4.0;
         double t = std::min(1.0, (s - 4) / 8.0);
         return 0.1 + 0.9 * 0.5 * (1 + std::cos(pi * t));
       }},
      {nn::Schedule::piecewise({2, 5}, {1, 0.1, 0.01}), [](int s) { return s < 2   ? 1
                                                                           : s < 5 ? 0.1
                                                                                   : 0.01; }},
      // PyTorch's LambdaLR warm-up (t + 1) / W for W = 4 steps, then a cosine from 1 to 0 over 8.
      {nn::join_schedules({nn::Schedule::function("ramp", [](const Tensor& t) { return (t + 1.0) / 4.0; }),
                           nn::Schedule::warmup_cosine(0, 8)},
                          {4}),
       [pi](int s) { return s < 4 ? (s + 1) / 4.0 : 0.5 * (1 + std::cos(pi * std::min(1.0, (s - 4) / 8.0))); }},
      // Joins nest, and each part counts its steps from its own start.
      {nn::join_schedules(
           {nn::Schedule::exponential(0.5), nn::join_schedules({nn::Schedule::step(2, 0.1), nn::Schedule()}, {4})},
           {3}),
       [](int s) { return s < 3   ? std::pow(0.5, s)
                          : s < 7 ? std::pow(0.1, (s - 3) / 2)
                                  : 1.0; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.schedule.describe());
    auto factors = jit([&c](const Tensor& steps) {
      std::vector<Tensor> out;
      for (int64_t s = 0; s < steps.dim(0); ++s)
        out.push_back(c.schedule(fx::take(steps, fx::scalar(static_cast<double>(s), fx::i32)), DType::f32));
      return fx::stack(out);
    });
    std::vector<int32_t> s(16);
    for (int i = 0; i < 16; ++i) s[static_cast<size_t>(i)] = i;
    std::vector<double> got = factors(Array(s, {16})).to_doubles();
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(got[static_cast<size_t>(i)], c.want(i), 1e-6) << "step " << i;
  }
}

TEST_P(Optimizers, ScheduleCountsStepsInTheState) {
  // lr 1 and gradient 1: each step moves p by -factor(step).
  auto r = steps(nn::sgd({.lr = 1, .schedule = nn::Schedule::piecewise({2}, {1, 0.25})}), {0}, {{1}, {1}, {1}, {1}});
  expect_near({r[0][0], r[1][0], r[2][0], r[3][0]}, {-1, -2, -2.25, -2.5});
}

TEST_P(Optimizers, ScheduleNumbersAreHyperparameters) {
  auto trainer_with = [&](nn::Schedule schedule) {
    return nn::Trainer(
        nn::Model(nn::Dense(3, 2)), [](const Tensor& o, const Tensor& y) { return nn::mse(o, y); },
        nn::adam({.lr = 0.1, .schedule = std::move(schedule)}), backend());
  };
  Array x = make(DType::f32, {1, 2, 3, 4, 5, 6}, {2, 3}), y = make(DType::f32, {1, 0, 0, 1}, {2, 2});
  nn::Trainer short_run = trainer_with(nn::Schedule::warmup_cosine(2, 10));
  nn::TrainState a = short_run.init(0);
  short_run.step(a, x, y);
  // A longer run's schedule is the same program with other numbers: no compile.
  fx::reset_counters();
  nn::Trainer long_run = trainer_with(nn::Schedule::warmup_cosine(4, 40));
  nn::TrainState b = long_run.init(0);
  long_run.step(b, x, y);
  EXPECT_EQ(fx::counters().compiles, 0u);
  EXPECT_EQ(long_run.optimizer().hyperparameter(b.opt_state, "lr.total"), 40);
  // Setting the numbers in a state changes the factor at once: a warm-up of a million steps
  // from 0 leaves Adam's step (about lr per element) a millionth as long; none at all leaves it whole.
  auto largest_move = [&] {
    std::vector<double> before = a.params[0].to_doubles();
    short_run.step(a, x, y);
    std::vector<double> after = a.params[0].to_doubles();
    double m = 0;
    for (size_t i = 0; i < before.size(); ++i) m = std::max(m, std::abs(after[i] - before[i]));
    return m;
  };
  const nn::Optimizer& opt = short_run.optimizer();
  opt.set_hyperparameter(a.opt_state, "lr.warmup", 1e6);
  opt.set_hyperparameter(a.opt_state, "lr.total", 2e6);
  EXPECT_LT(largest_move(), 1e-6);
  opt.set_hyperparameter(a.opt_state, "lr.warmup", 0);
  EXPECT_GT(largest_move(), 0.01);
  EXPECT_EQ(fx::counters().compiles, 0u);
  EXPECT_EQ(nn::adam({.schedule = nn::Schedule::warmup_cosine(2, 10)}).describe(),
            "adam(beta1=0.9, beta2=0.999, eps=1e-08, lr=0.001, lr.warmup=2, lr.total=10, lr.final=0, lr.start=0, "
            "schedule=warmup_cosine)");
}

TEST_P(Optimizers, HyperparametersChangeWithoutRecompiling) {
  nn::Trainer trainer(
      nn::Model(nn::Dense(3, 2)), [](const Tensor& o, const Tensor& y) { return nn::mse(o, y); }, nn::adam({.lr = 0.1}),
      backend());
  nn::TrainState state = trainer.init(0);
  Array x = make(DType::f32, {1, 2, 3, 4, 5, 6}, {2, 3}), y = make(DType::f32, {1, 0, 0, 1}, {2, 2});
  trainer.step(state, x, y);
  fx::reset_counters();
  EXPECT_DOUBLE_EQ(trainer.optimizer().hyperparameter(state.opt_state, "lr"), 0.1f);
  trainer.optimizer().set_hyperparameter(state.opt_state, "lr", 0);
  trainer.optimizer().set_hyperparameter(state.opt_state, "beta1", 0.5);
  std::vector<double> before = state.params[0].to_doubles();
  trainer.step(state, x, y);
  EXPECT_EQ(state.params[0].to_doubles(), before) << "lr 0 leaves the parameters";
  trainer.optimizer().set_hyperparameter(state.opt_state, "lr", 0.01);
  trainer.step(state, x, y);
  EXPECT_NE(state.params[0].to_doubles(), before);
  EXPECT_EQ(fx::counters().compiles, 0u);
  EXPECT_EQ(trainer.optimizer().hyperparameter(state.opt_state, "beta1"), 0.5);
}

TEST(OptimizersState, NamesAndErrors) {
  std::vector<std::string> names{"w", "b"};
  EXPECT_EQ(nn::adam().state_names(names),
            (std::vector<std::string>{"hyper.beta1", "hyper.beta2", "hyper.eps", "hyper.lr", "adam.step", "adam.m.w",
                                      "adam.m.b", "adam.v.w", "adam.v.b"}));
  EXPECT_EQ(nn::sgd({.momentum = 0.9}).state_names(names),
            (std::vector<std::string>{"hyper.momentum", "hyper.lr", "momentum.w", "momentum.b"}));
  EXPECT_EQ(nn::sgd().state_names(names), (std::vector<std::string>{"hyper.lr"}));
  EXPECT_EQ(nn::sgd({.schedule = nn::Schedule::exponential(0.5)}).state_names(names),
            (std::vector<std::string>{"hyper.lr", "hyper.lr.gamma", "lr.step"}));
  EXPECT_EQ(nn::adamw().describe(), "adamw(beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.01, lr=0.001)");
  auto update = fx::jit(
      [](const std::vector<Tensor>& p, const std::vector<Tensor>& g) { return nn::adam().update(p, g, {}).first; },
      Backend::Interp);
  EXPECT_THROW(update(std::vector<Array>{Array(fx::f32, {2})}, std::vector<Array>{Array(fx::f32, {2})}), fx::Error);
  // Hyperparameters: unknown names are Errors naming the known ones; duplicates in a chain too.
  std::vector<Array> state = nn::sgd().init({Array(fx::f32, {2})});
  expect_error_containing([&] { nn::sgd().set_hyperparameter(state, "momentum", 0.9); }, "it has: lr");
  expect_error_containing([&] { nn::chain({nn::scale_by_adam(), nn::scale_by_lion()}); }, "'beta1'");
  expect_error_containing([] { nn::Schedule::warmup_cosine(10, 5); }, "warmup < total");
  expect_error_containing([] { nn::Schedule::piecewise({3, 1}, {1, 2, 3}); }, "increasing");
  expect_error_containing(
      [] {
        nn::join_schedules({nn::Schedule(), nn::Schedule()}, {});
      },
      "2 schedules and 0 boundaries");
  expect_error_containing([] { nn::join_schedules({nn::Schedule(), nn::Schedule()}, {0}); }, "positive increasing");
  nn::Schedule vector_valued = nn::Schedule::function("ramp", [](const Tensor& t) { return fx::stack({t, t}); });
  expect_error_containing(
      [&] {
        fx::jit([&](const Tensor& s) { return vector_valued(s, DType::f32); },
                Backend::Interp)(Array::scalar(int32_t{0}));
      },
      "'ramp' returned f32[2], expected a float scalar");
  // f64 parameters get f64 hyperparameters: lr = 0.1 exactly.
  nn::Optimizer sgd = nn::sgd({.lr = 0.1});
  std::vector<Array> wide = sgd.init({Array(fx::f64, {2})});
  EXPECT_EQ(wide[0].dtype(), fx::f64);
  EXPECT_EQ(sgd.hyperparameter(wide, "lr"), 0.1);
}

TEST(OptimizersState, ReduceOnPlateauFollowsPyTorch) {
  // patience 2, factor 0.5, cooldown 1: PyTorch's ReduceLROnPlateau lowers the rate at the 4th
  // evaluation without improvement after the best, then skips one for the cooldown.
  nn::Optimizer opt = nn::sgd({.lr = 1});
  std::vector<Array> state = opt.init({Array(fx::f32, {1})});
  nn::ReduceOnPlateau plateau({.factor = 0.5, .patience = 2, .cooldown = 1});
  std::vector<double> metrics{1.0, 0.9, 0.95, 0.91, 0.9, 0.92, 0.93, 0.94, 0.95, 0.8};
  std::vector<double> lrs;
  for (double m : metrics) {
    plateau.observe(m, opt, state);
    lrs.push_back(opt.hyperparameter(state, "lr"));
  }
  // Best 0.9 at evaluation 2; bad: 0.95, 0.91, 0.9 (not below 0.9 * (1 - 1e-4)) -> 3 > 2: halve
  // at evaluation 5; cooldown eats 0.92; then 0.93, 0.94, 0.95 -> halve at evaluation 9.
  EXPECT_EQ(lrs, (std::vector<double>{1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.25, 0.25}));
  EXPECT_EQ(plateau.best(), 0.8);
}
