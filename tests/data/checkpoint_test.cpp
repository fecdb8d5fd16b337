// Training checkpoints: a round trip resumes training exactly; mismatched files are refused
// with every problem listed and the state left unchanged; a failed save keeps the old file.
#include "common/test_names.h"
#include "data/data_test_util.h"
#include "support/files.h"

namespace nn = fluxion::nn;

class Checkpoints : public FileTest {
 protected:
  nn::Model model = nn::Sequential{nn::Dense(4, 3), nn::Tanh(), nn::Dense(3, 2)};
  nn::Optimizer opt = nn::adam({.lr = 0.01});
  nn::Trainer trainer{model, [](const Tensor& o, const Tensor& y) { return nn::softmax_cross_entropy(o, y); }, opt,
                      fx::Backend::Cpu};
  Array x = Array(std::vector<float>{1, 2, 3, 4, -1, 0, 1, 0.5f}, {2, 4});
  Array y = Array(std::vector<int32_t>{0, 1}, {2});
};

TEST_F(Checkpoints, RoundTripResumesTrainingExactly) {
  nn::TrainState a = trainer.init(1);
  for (int i = 0; i < 3; ++i) trainer.step(a, x, y);
  nn::save_checkpoint(path("ck.safetensors"), model, opt, a);
  std::vector<double> saved_bias = a.params[3].to_doubles();
  nn::TrainState b = trainer.init(2);
  nn::load_checkpoint(path("ck.safetensors"), model, opt, b);
  for (size_t i = 0; i < a.params.size(); ++i) EXPECT_EQ(a.params[i].to_doubles(), b.params[i].to_doubles());
  for (size_t i = 0; i < a.opt_state.size(); ++i) EXPECT_EQ(a.opt_state[i].to_doubles(), b.opt_state[i].to_doubles());
  // The next steps from the loaded state equal the next steps of the original.
  EXPECT_EQ(trainer.step(a, x, y).item(), trainer.step(b, x, y).item());
  EXPECT_EQ(trainer.step(a, x, y).item(), trainer.step(b, x, y).item());
  // The file names parameters as a torch state_dict does, and holds the optimizer's state.
  std::vector<std::string> names;
  for (const auto& [name, unused] : fx::load_safetensors(path("ck.safetensors"))) names.push_back(name);
  EXPECT_EQ(names[0], "0.weight");
  EXPECT_NE(std::find(names.begin(), names.end(), "optimizer.adam.m.2.bias"), names.end());
  EXPECT_EQ(nn::load_parameters(path("ck.safetensors"), model)[3].to_doubles(), saved_bias);
}

// The tutorial's way: a state built field by field, without Trainer::init, saves (at step 0 with
// seed 0's key, which a Trainer then continues from) and loads back.
TEST_F(Checkpoints, AStateBuiltByHandSavesAndLoads) {
  nn::TrainState s;
  s.params = model.init(4);
  s.opt_state = opt.init(s.params);
  nn::save_checkpoint(path("hand.safetensors"), model, opt, s);
  nn::TrainState loaded = trainer.init(9);
  nn::load_checkpoint(path("hand.safetensors"), model, opt, loaded);
  EXPECT_EQ(loaded.params[0].to_doubles(), s.params[0].to_doubles());
  EXPECT_EQ(loaded.step.to_doubles(), std::vector<double>{0});
  EXPECT_EQ(loaded.key.to_doubles(), trainer.init(0).key.to_doubles());
  trainer.step(loaded, x, y);
  EXPECT_EQ(loaded.step.item(), 1);
  // A state that lacks the optimizer's tensors is refused, saying how many of each it holds.
  s.opt_state.clear();
  std::string m = error_of([&] { nn::save_checkpoint(path("hand.safetensors"), model, opt, s); });
  EXPECT_NE(m.find("the state holds 4 parameters, 0 optimizer tensors"), std::string::npos) << m;
}

TEST_F(Checkpoints, MismatchesAreListedAndTheStateIsUnchanged) {
  nn::TrainState s = trainer.init(1);
  nn::save_checkpoint(path("ck.safetensors"), model, opt, s);
  nn::Model wider = nn::Sequential{nn::Dense(4, 5), nn::Tanh(), nn::Dense(5, 2)};
  nn::Trainer other(wider, [](const Tensor& o, const Tensor& t) { return nn::softmax_cross_entropy(o, t); }, opt,
                    fx::Backend::Cpu);
  nn::TrainState w = other.init(3);
  std::vector<double> before = w.params[0].to_doubles();
  std::string m = error_of([&] { nn::load_checkpoint(path("ck.safetensors"), wider, opt, w); });
  EXPECT_NE(m.find("'0.weight' is f32[3,4], expected f32[5,4]"), std::string::npos) << m;
  EXPECT_NE(m.find("'2.weight' is f32[2,3], expected f32[2,5]"), std::string::npos) << m;
  EXPECT_EQ(w.params[0].to_doubles(), before);
  // Another optimizer's state: missing and unexpected names.
  std::string m2 = error_of([&] { nn::load_checkpoint(path("ck.safetensors"), model, nn::sgd({.momentum = 0.9}), s); });
  EXPECT_NE(m2.find("missing 'optimizer.momentum.0.weight'"), std::string::npos) << m2;
  EXPECT_NE(m2.find("unexpected 'optimizer.adam.step'"), std::string::npos) << m2;
  // A dtype mismatch.
  fx::NamedArrays entries = fx::load_safetensors(path("ck.safetensors"));
  entries[0].second = Array(fx::f64, entries[0].second.shape());
  fx::save_safetensors(path("f64.safetensors"), entries);
  EXPECT_NE(error_of([&] { nn::load_checkpoint(path("f64.safetensors"), model, opt, s); }).find("f64[3,4], expected f32[3,4]"),
            std::string::npos);
}

TEST_F(Checkpoints, DamagedAndInterruptedFiles) {
  nn::TrainState s = trainer.init(1);
  nn::save_checkpoint(path("ck.safetensors"), model, opt, s);
  std::string good = read_bytes(path("ck.safetensors"));
  write_bytes(path("cut.safetensors"), good.substr(0, good.size() - 16));
  EXPECT_NE(error_of([&] { nn::load_checkpoint(path("cut.safetensors"), model, opt, s); }).find("truncated"),
            std::string::npos);
  // A save that fails midway keeps the previous checkpoint.
  for (int i = 0; i < 2; ++i) trainer.step(s, x, y);
  fluxion::support::fail_writes_after_for_testing(static_cast<int64_t>(good.size() / 2));
  EXPECT_THROW(nn::save_checkpoint(path("ck.safetensors"), model, opt, s), fx::Error);
  fluxion::support::fail_writes_after_for_testing(-1);
  EXPECT_EQ(read_bytes(path("ck.safetensors")), good);
  nn::save_checkpoint(path("ck.safetensors"), model, opt, s);
  EXPECT_NE(read_bytes(path("ck.safetensors")), good);
}
