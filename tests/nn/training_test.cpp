// The compiled training step on every backend: each sample model, trained briefly on a small
// subset of Fashion-MNIST, reduces its loss; runs are reproducible; parameters stay on the
// Vulkan device between steps; the LSTM step fuses as seed 001 asks.
#include <gtest/gtest.h>

#include <fluxion/profile.h>

#include <string>
#include <tuple>

#include "common/models.h"
#include "common/scoped_env.h"
#include "common/test_names.h"
#include "nn/nn_test_util.h"

namespace nn = fluxion::nn;

class Training : public BackendTest {
 protected:
  static const fx::data::Dataset& subset() {
    static const fx::data::Dataset d = fx::data::subset(fx::data::fashion_mnist("train"), 0, 256);
    return d;
  }
  // Trains for `epochs` passes over the subset in batches of 64; returns the losses of the
  // whole subset before and after, and every step's loss.
  struct Run {
    double before, after;
    std::vector<double> steps;
  };
  Run train(const nn::Model& model, const nn::Optimizer& opt, int epochs) { return train_on(backend(), model, opt, epochs); }
  Run train_on(Backend b, const nn::Model& model, const nn::Optimizer& opt, int epochs) {
    nn::Trainer trainer(model, [](const Tensor& o, const Tensor& y) { return nn::softmax_cross_entropy(o, y); }, opt, b);
    nn::TrainState state = trainer.init(3);
    auto loss = [&] { return trainer.evaluate(state.params, subset().inputs, subset().targets).first.item(); };
    Run r{loss(), 0, {}};
    fx::data::Loader loader(subset(), {.batch_size = 64, .shuffle = true, .seed = 1});
    for (int e = 0; e < epochs; ++e) {
      loader.set_epoch(e);
      for (int64_t i = 0; i < loader.size(); ++i) {
        auto [x, y] = loader.batch(i);
        r.steps.push_back(trainer.step(state, x, y).item());
      }
    }
    r.after = loss();
    return r;
  }
};
FLUXION_INSTANTIATE_BACKENDS(Training);

TEST_P(Training, MlpLearns) {
  Run r = train(samples::mlp_model(32), nn::adam({.lr = 3e-3}), 4);
  EXPECT_LT(r.after, 0.7 * r.before) << r.before << " -> " << r.after;
}

TEST_P(Training, LeNetLearns) {
  Run r = train(samples::lenet_model(), nn::adam({.lr = 5e-3}), 3);
  EXPECT_LT(r.after, 0.85 * r.before) << r.before << " -> " << r.after;
}

TEST_P(Training, LstmAndGruLearn) {
  for (const char* cell : {"lstm", "gru"}) {
    Run r = train(samples::rnn_model(cell, 16), nn::adam({.lr = 2e-2}), 4);
    EXPECT_LT(r.after, 0.9 * r.before) << cell << ": " << r.before << " -> " << r.after;
  }
}

TEST_P(Training, CharModelLearns) {
  fx::data::CharText text = fx::data::CharText::from_string(
      "the quick brown fox jumps over the lazy dog. the quick brown fox jumps over the lazy dog. ");
  samples::CharModel net(text.vocab_size(), 8, 16, 1);
  fx::data::Dataset seqs = text.sequences(10);
  nn::Trainer trainer(net.model, [](const Tensor& o, const Tensor& y) { return nn::softmax_cross_entropy(o, y); },
                      nn::adam({.lr = 2e-2}), backend());
  nn::TrainState s = trainer.init(0);
  double first = trainer.step(s, seqs.inputs, seqs.targets).item(), last = first;
  for (int i = 0; i < 30; ++i) last = trainer.step(s, seqs.inputs, seqs.targets).item();
  EXPECT_LT(last, 0.5 * first) << first << " -> " << last;
}

TEST_P(Training, SameSeedSameNumbers) {
  Run a = train(samples::mlp_model(16), nn::sgd({.lr = 0.1, .momentum = 0.9}), 1);
  Run b = train(samples::mlp_model(16), nn::sgd({.lr = 0.1, .momentum = 0.9}), 1);
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.after, b.after);
}

TEST_P(Training, MatchesTheInterpreterStepByStep) {
  // The interpreter's run is the reference (itself when the backend is the interpreter, which
  // then checks that its reference is reproducible).
  Run here = train(samples::mlp_model(16), nn::adam({.lr = 1e-3}), 1);
  Run ref = train_on(Backend::Interp, samples::mlp_model(16), nn::adam({.lr = 1e-3}), 1);
  ASSERT_EQ(here.steps.size(), ref.steps.size());
  for (size_t i = 0; i < ref.steps.size(); ++i) EXPECT_NEAR(here.steps[i], ref.steps[i], 1e-4 * ref.steps[i]) << "step " << i;
}

TEST(TrainingVulkan, ParametersStayOnTheDevice) {
  bool have = false;
  for (Backend b : fx::available_backends()) have = have || b == Backend::Vulkan;
  if (!have) GTEST_SKIP() << "no Vulkan device";
  nn::Model model = samples::mlp_model(16);
  nn::Trainer trainer(model, [](const Tensor& o, const Tensor& y) { return nn::softmax_cross_entropy(o, y); },
                      nn::adam(), Backend::Vulkan);
  nn::TrainState s = trainer.init(0);
  Array x(fx::f32, {8, 1, 28, 28}), y(fx::i32, {8});
  fx::reset_counters();
  for (int i = 0; i < 3; ++i) trainer.step(s, x, y);
  for (const Array& p : s.params) EXPECT_TRUE(p.on_device());
  for (const Array& p : s.opt_state) EXPECT_TRUE(p.on_device());
  EXPECT_EQ(fx::counters().native_calls, 3u);  // one submission per step
}

// A Trainer's step is traced inside the library: its compile notice and its entry in
// compile_times() also name the user's line that called the step.
TEST(TrainingCompile, TheNoticeNamesTheLineThatCalledTheStep) {
  fx::testing::ScopedEnv no_disk("FLUXION_DISK_CACHE", "0");
  fx::testing::ScopedEnv notices("FLUXION_COMPILE_NOTICE_SECONDS", "0.000001");
  nn::Model model = samples::mlp_model(16);
  nn::Trainer trainer(
      model, [](const Tensor& o, const Tensor& y) { return nn::softmax_cross_entropy(o, y); }, nn::adam(),
      Backend::Cpu);
  nn::TrainState s = trainer.init(0);
  Array x(fx::f32, {8, 1, 28, 28}), y(fx::i32, {8});
  ::testing::internal::CaptureStderr();
  int line = __LINE__ + 1;
  trainer.step(s, x, y);
  std::string err = ::testing::internal::GetCapturedStderr();
  std::string site = ", called from " + std::string(__FILE__) + ":" + std::to_string(line) + ")";
  EXPECT_NE(err.find(site), std::string::npos) << err;
  ASSERT_FALSE(fx::compile_times().empty());
  EXPECT_NE(fx::compile_times().back().program.find(site), std::string::npos) << fx::compile_times().back().program;
  // A program the user jitted and called directly is named by its trace alone.
  ::testing::internal::CaptureStderr();
  fx::jit([](Tensor t) { return t * 3.0; }, Backend::Cpu)(x);
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("traced from"), std::string::npos) << err;
  EXPECT_EQ(err.find("called from"), std::string::npos) << err;
}

// Each step's new parameters and optimizer state replace the previous step's, whose buffers
// the next step's results reuse: once warm, a step takes no device memory and submits once.
TEST(TrainingVulkan, SteadyStateStepsMakeNoDeviceAllocations) {
  bool have = false;
  for (Backend b : fx::available_backends()) have = have || b == Backend::Vulkan;
  if (!have) GTEST_SKIP() << "no Vulkan device";
  for (const auto& [name, model] :
       {std::pair{"mlp", samples::mlp_model(16)}, std::pair{"lstm", samples::rnn_model("lstm", 16, 1)}}) {
    SCOPED_TRACE(name);
    nn::Trainer trainer(
        model, [](const Tensor& o, const Tensor& y) { return nn::softmax_cross_entropy(o, y); }, nn::adam(),
        Backend::Vulkan);
    nn::TrainState s = trainer.init(0);
    std::vector<double> pixels = fx::testing::random_doubles(8 * 28 * 28, 0, 1, 5);
    Array x(std::vector<float>(pixels.begin(), pixels.end()), {8, 1, 28, 28});
    Array y(std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}, {8});
    Array loss;
    auto steps = [&](int n) {
      for (int i = 0; i < n; ++i) loss = trainer.step(s, x, y);
    };
    steps(1);
    double first = loss.item();
    steps(3);
    fx::reset_counters();
    steps(5);
    fx::RuntimeCounters c = fx::counters();
    EXPECT_EQ(c.device_allocations, 0u);
    EXPECT_EQ(c.submissions, 5u);
    EXPECT_EQ(c.program_calls, 5u);
    // The reused buffers hold each step's own results: the loss on one batch keeps falling.
    EXPECT_LT(loss.item(), first);
  }
}

// The CPU's threads never change a bit: each sample model trained for 100 steps on 1 and on 2
// threads (and on 4, more than CI's cores) ends with the same parameters. The batches are large
// enough that kernels are split across threads, bias gradients into parts (docs/cpu.md).
TEST(TrainingCpu, ParametersAfterOneHundredStepsAreTheSameAtEveryThreadCount) {
  int before = fx::num_threads();
  for (const auto& [name, model, batch] : {std::tuple{"mlp", samples::mlp_model(64), int64_t{2048}},
                                           std::tuple{"lenet", samples::lenet_model(), int64_t{256}},
                                           std::tuple{"lstm", samples::rnn_model("lstm", 64, 1), int64_t{512}}}) {
    SCOPED_TRACE(name);
    nn::Trainer trainer(
        model, [](const Tensor& o, const Tensor& y) { return nn::softmax_cross_entropy(o, y); }, nn::adam({.lr = 1e-3}),
        Backend::Cpu);
    std::vector<double> pixels = fx::testing::random_doubles(batch * 28 * 28, 0, 1, 11);
    std::vector<double> labels = fx::testing::random_ints(batch, 0, 9, 12);
    Array x(std::vector<float>(pixels.begin(), pixels.end()), {batch, 1, 28, 28});
    Array y(std::vector<int32_t>(labels.begin(), labels.end()), {batch});
    std::vector<std::vector<double>> first;
    for (int threads : {1, 2, 4}) {
      fx::set_num_threads(threads);
      nn::TrainState s = trainer.init(7);
      for (int i = 0; i < 100; ++i) trainer.step(s, x, y);
      std::vector<std::vector<double>> params;
      for (const Array& p : s.params) params.push_back(p.to_doubles());
      if (first.empty()) {
        first = params;
      } else {
        EXPECT_TRUE(params == first) << "parameters differ at " << threads << " threads";
      }
    }
  }
  fx::set_num_threads(before);
}

TEST(TrainingFusion, LstmStepIsOneMatmulAndOneKernelAfterIt) {
  // Seed 001: the step's gates come from one matmul (h W_hh^T) whose epilogue adds the
  // hoisted input gates; everything after it is one kernel.
  nn::RecurrentCell cell = nn::LSTMCell(8, 16);
  auto f = fx::jit([&](const std::vector<Tensor>& p, const Tensor& xg, const Tensor& h, const Tensor& c) {
    std::vector<Tensor> q{p[0], p[1], p[2], p[3]};
    return cell.step(q, xg, {h, c});
  }, Backend::Cpu);
  std::string text = f.lower(nn::Model(cell).init(0), Array(fx::f32, {4, 8}), Array(fx::f32, {4, 16}),
                             Array(fx::f32, {4, 16})).kernels();
  size_t gate_kernels = 0, kernels = 0;
  for (size_t pos = 0; (pos = text.find("kernel ", pos)) != std::string::npos; ++pos) {
    ++kernels;
    size_t end = text.find('\n', pos);
    std::string line = text.substr(pos, end - pos);
    if (line.find("sigmoid") != std::string::npos) {
      ++gate_kernels;
      EXPECT_NE(line.find("tanh"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(gate_kernels, 1u) << text;
  EXPECT_LE(kernels, 4u) << text;  // the input matmul, the recurrent matmul, the gates (+ a bias sum)
}

TEST(TrainingFusion, LstmBackwardStepReusesTheStoredGates) {
  // The reverse scan reads the gate pre-activations the forward scan stored (docs/autodiff.md):
  // its step runs the two adjoint matmuls (dh and dW_hh), not the forward matmul again, and one
  // kernel for every pointwise op of the cell, forward values and adjoints together.
  nn::Model m = nn::LSTM({.input = 8, .hidden = 32, .last_only = true});
  auto g = fx::jit([&](const std::vector<Tensor>& p, const Tensor& x) {
    return fx::value_and_grad([&](const std::vector<Tensor>& q) { return fx::sum(m(q, x)); })(p);
  }, Backend::Cpu);
  std::string text = g.lower(m.init(0), Array(fx::f32, {16, 10, 8})).kernels();
  size_t second_scan = text.find("scan {", text.find("scan {") + 1);
  ASSERT_NE(second_scan, std::string::npos) << text;
  std::string reverse = text.substr(second_scan, text.find('}', second_scan) - second_scan);
  size_t matmuls = 0, pointwise = 0;
  for (size_t pos = 0; (pos = reverse.find("kernel ", pos)) != std::string::npos; ++pos) {
    std::string line = reverse.substr(pos, reverse.find('\n', pos) - pos);
    matmuls += line.find(" matmul[") != std::string::npos;
    pointwise += line.find("sigmoid") != std::string::npos;
  }
  EXPECT_EQ(matmuls, 2u) << reverse;
  EXPECT_EQ(pointwise, 1u) << reverse;
}
