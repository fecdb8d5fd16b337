// The layer protocol's mode, random key and state: dropout, batch norm's running statistics
// through the Trainer, and the errors of layers used without what they need.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/test_names.h"
#include "nn/nn_test_util.h"

namespace nn = fluxion::nn;

class StatefulLayers : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(StatefulLayers);

TEST_P(StatefulLayers, DropoutDropsAFractionPAndKeepsTheMean) {
  nn::Model drop(nn::Dropout(0.25));
  Array x = make(DType::f32, std::vector<double>(4000, 2.0), {40, 100});
  auto run = jit([drop](const Tensor& x, const Tensor& key) {
    nn::Applied train = drop.apply({}, {}, x, {.training = true, .key = key});
    nn::Applied eval = drop.apply({}, {}, x, {});
    return std::make_pair(train.output, eval.output);
  });
  auto [y, same] = run(x, Array(std::vector<int32_t>{1, 2}, {2}));
  std::vector<double> v = y.to_doubles();
  int zeros = 0;
  for (double e : v) {
    if (e == 0) ++zeros;
    else EXPECT_NEAR(e, 2 / 0.75, 1e-6);
  }
  // 4000 draws of p = 0.25: 1000 expected, standard deviation ~27.
  EXPECT_NEAR(zeros, 1000, 150);
  EXPECT_EQ(same.to_doubles(), x.to_doubles()) << "evaluation mode is the identity";
  // The same key gives the same mask; another key another one.
  EXPECT_EQ(run(x, Array(std::vector<int32_t>{1, 2}, {2})).first.to_doubles(), v);
  EXPECT_NE(run(x, Array(std::vector<int32_t>{1, 3}, {2})).first.to_doubles(), v);
}

TEST_P(StatefulLayers, SequentialGivesEachLayerItsOwnKey) {
  nn::Model two(nn::Sequential{nn::Dropout(0.5), nn::Dropout(0.5)});
  nn::Model one(nn::Dropout(0.5));
  auto masks = jit([one, two](const Tensor& x, const Tensor& key) {
    return std::make_pair(two.apply({}, {}, x, {.training = true, .key = key}).output,
                          one.apply({}, {}, x, {.training = true, .key = key}).output);
  })(make(DType::f32, std::vector<double>(256, 1.0), {256}), Array(std::vector<int32_t>{5, 6}, {2}));
  int kept_both = 0;
  for (double v : masks.first.to_doubles()) kept_both += v != 0;
  EXPECT_NEAR(kept_both, 64, 30) << "two independent masks keep a quarter";
}

TEST_P(StatefulLayers, TrainerUpdatesBatchNormStatisticsAndResumesBitwise) {
  nn::Model model(nn::Sequential{nn::Dense(6, 8), nn::BatchNorm1d(8), nn::ReLU(), nn::Dropout(0.2), nn::Dense(8, 3)});
  EXPECT_EQ(model.state_names(), (std::vector<std::string>{"1.running_mean", "1.running_var"}));
  auto loss = [](const Tensor& o, const Tensor& y) { return nn::softmax_cross_entropy(o, y); };
  nn::Trainer trainer(model, loss, nn::adam({.lr = 1e-2}), backend());
  Array x = make(DType::f32, random_doubles(16 * 6, -1, 1, 3), {16, 6});
  Array y(std::vector<int32_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, {16});
  nn::TrainState a = trainer.init(1);
  for (int i = 0; i < 3; ++i) trainer.step(a, x, y);
  EXPECT_EQ(a.step.item(), 3);
  EXPECT_NE(a.model_state[0].to_doubles(), std::vector<double>(8, 0.0)) << "running_mean moved";
  // A file of this process's own: the test runs once per backend, side by side under ctest -j,
  // and a shared name let one backend's run load another's checkpoint.
  std::string path = fluxion::testing::temp_path("stateful.safetensors");
  nn::save_checkpoint(path, model, trainer.optimizer(), a);
  for (int i = 0; i < 3; ++i) trainer.step(a, x, y);
  nn::TrainState b = trainer.init(99);
  nn::load_checkpoint(path, model, trainer.optimizer(), b);
  for (int i = 0; i < 3; ++i) trainer.step(b, x, y);
  for (size_t i = 0; i < a.params.size(); ++i) EXPECT_EQ(a.params[i].to_doubles(), b.params[i].to_doubles()) << i;
  for (size_t i = 0; i < a.model_state.size(); ++i)
    EXPECT_EQ(a.model_state[i].to_doubles(), b.model_state[i].to_doubles()) << i;
  std::filesystem::remove(path);
  // Evaluation uses the running statistics: the same rows give the same outputs whatever else
  // is in the batch.
  std::vector<double> all = trainer.predict(a, x).to_doubles();
  std::vector<double> xs = x.to_doubles();
  Array first_rows = make(DType::f32, std::vector<double>(xs.begin(), xs.begin() + 4 * 6), {4, 6});
  std::vector<double> alone = trainer.predict(a, first_rows).to_doubles();
  for (size_t i = 0; i < alone.size(); ++i) EXPECT_NEAR(alone[i], all[i], 1e-5) << i;
}

TEST_P(StatefulLayers, AnF64ModelWithBatchNormTrainsInF64) {
  FLUXION_REQUIRE_F64(backend());
  nn::Model model(nn::Sequential{nn::Dense(6, 8), nn::BatchNorm1d(8), nn::ReLU(), nn::Dense(8, 3)});
  auto loss = [](const Tensor& o, const Tensor& y) { return nn::softmax_cross_entropy(o, y); };
  nn::Trainer trainer(model, loss, nn::adam({.lr = 1e-2}), backend());
  Array x = make(DType::f64, random_doubles(16 * 6, -1, 1, 3), {16, 6});
  Array y(std::vector<int32_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}, {16});
  nn::TrainState s = trainer.init(1, DType::f64);
  for (const Array& p : s.params) EXPECT_EQ(p.dtype(), DType::f64);
  for (const Array& m : s.model_state) EXPECT_EQ(m.dtype(), DType::f64);
  // The f64 values are the f32 model's, widened.
  std::vector<Array> narrow = model.init(1);
  for (size_t i = 0; i < narrow.size(); ++i) EXPECT_EQ(s.params[i].to_doubles(), narrow[i].to_doubles()) << i;
  double first = trainer.step(s, x, y).item();
  double last = first;
  for (int i = 0; i < 20; ++i) last = trainer.step(s, x, y).item();
  EXPECT_LT(last, first);
  EXPECT_EQ(trainer.predict(s, x).dtype(), DType::f64);
  expect_error_containing([&] { model.init_state(DType::i32); }, "dtype must be a float dtype, got i32");
}

TEST(StatefulLayersErrors, WhatALayerNeedsIsNamed) {
  nn::Model bn(nn::BatchNorm1d(4));
  std::vector<Array> p = bn.init(0);
  Array x(fx::f32, {2, 4});
  expect_error_containing(
      [&] { fx::jit([bn](const std::vector<Tensor>& p, const Tensor& x) { return bn(p, x); }, Backend::Interp)(p, x); },
      "has state (running_mean, ...)");
  nn::Model drop(nn::Dropout(0.5));
  expect_error_containing(
      [&] {
        fx::jit([drop](const Tensor& x) { return drop.apply({}, {}, x, {.training = true, .key = {}}).output; },
                Backend::Interp)(x);
      },
      "needs a random key");
  struct Nothing : nn::Layer {
    std::string describe() const override { return "Nothing"; }
  };
  nn::Model nothing(Nothing{});
  expect_error_containing([&] { fx::jit([nothing](const Tensor& x) { return nothing({}, x); }, Backend::Interp)(x); },
                          "implements neither forward() nor apply()");
  nn::Trainer trainer(
      bn, [](const Tensor& o, const Tensor&) { return fx::sum(o); }, nn::sgd(), Backend::Interp);
  expect_error_containing([&] { trainer.predict(p, x); }, "pass the TrainState");
  EXPECT_THROW(nn::Dropout(1.5), fx::Error);
  EXPECT_THROW(nn::MultiHeadAttention(10, 3), fx::Error);
}
