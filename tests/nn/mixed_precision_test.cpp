// Mixed-precision training on every backend: a bf16 policy's steps follow the f32 run's closely
// with parameters, optimizer state and loss in f32; f16's dynamic loss scaling skips a step
// whose gradients overflow (parameters and optimizer state unchanged, bit for bit), halves the
// scale, and doubles it after its interval of finite steps; the scale survives a checkpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "common/artifact_programs.h"
#include "common/models.h"
#include "common/test_names.h"
#include "nn/nn_test_util.h"

namespace nn = fluxion::nn;

namespace {

const fx::data::Dataset& subset() {
  static const fx::data::Dataset d = fx::data::subset(fx::data::fashion_mnist("train"), 0, 256);
  return d;
}

nn::Trainer trainer_for(Backend b, const nn::MixedPrecision& precision,
                        const nn::Model& model = samples::mlp_model(32)) {
  return nn::Trainer(model, [](const Tensor& o, const Tensor& y) { return nn::softmax_cross_entropy(o, y); },
                     nn::adam({.lr = 3e-3}), b, {.precision = precision});
}

// Every step's loss over two passes of the subset in batches of 64.
std::vector<double> step_losses(const nn::Trainer& trainer, nn::TrainState& state) {
  fx::data::Loader loader(subset(), {.batch_size = 64, .shuffle = true, .seed = 1});
  std::vector<double> out;
  for (int e = 0; e < 2; ++e) {
    loader.set_epoch(e);
    for (int64_t i = 0; i < loader.size(); ++i) {
      auto [x, y] = loader.batch(i);
      out.push_back(trainer.step(state, x, y).item());
    }
  }
  return out;
}

bool same_bits(const std::vector<Array>& a, const std::vector<Array>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!bitwise_equal(a[i], b[i])) return false;
  return true;
}

}  // namespace

class MixedPrecision : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(MixedPrecision);

TEST_P(MixedPrecision, Bf16StepsFollowTheF32RunWithF32State) {
  nn::Trainer f32 = trainer_for(backend(), {}), bf16 = trainer_for(backend(), nn::MixedPrecision::named("bf16"));
  nn::TrainState a = f32.init(3), b = bf16.init(3);
  EXPECT_TRUE(b.loss_scale.empty());
  std::vector<double> want = step_losses(f32, a), got = step_losses(bf16, b);
  for (const Array& p : b.params) EXPECT_EQ(p.dtype(), fx::f32);
  for (const Array& s : b.opt_state) EXPECT_TRUE(s.dtype() == fx::f32 || s.dtype() == fx::i32) << s.type().str();
  ASSERT_EQ(got.size(), want.size());
  // bf16's 8 bits in the forward pass: each loss within a few percent of the f32 run's, and
  // the run learns as much.
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.03 * want[i]) << "step " << i;
  EXPECT_LT(got.back(), 0.8 * got.front());
  EXPECT_NE(got, want) << "the policy changed nothing";
}

TEST_P(MixedPrecision, F16LossScalingSkipsOverflowingStepsAndAdaptsTheScale) {
  nn::MixedPrecision policy = nn::MixedPrecision::named("f16");
  policy.growth_interval = 2;
  nn::Trainer trainer = trainer_for(backend(), policy);
  nn::TrainState s = trainer.init(5);
  ASSERT_EQ(s.loss_scale.size(), 3u);
  EXPECT_EQ(s.loss_scale[0].item(), 65536.0);
  auto [x, y] = fx::data::Loader(subset(), {.batch_size = 64}).batch(0);
  // (scale, finite steps since it changed, steps skipped)
  auto scale = [&] { return std::make_tuple(s.loss_scale[0].item(), s.loss_scale[1].item(), s.loss_scale[2].item()); };
  // Finite steps: the scale doubles after two of them.
  double first = trainer.step(s, x, y).item();
  EXPECT_TRUE(std::isfinite(first));
  EXPECT_EQ(scale(), std::make_tuple(65536.0, 1.0, 0.0));
  trainer.step(s, x, y);
  EXPECT_EQ(scale(), std::make_tuple(131072.0, 0.0, 0.0));
  // Inputs past f16's range make the forward pass infinite: the step is skipped.
  std::vector<Array> params = s.params, opt_state = s.opt_state;
  for (Array& a : params) a = a.clone();
  for (Array& a : opt_state) a = a.clone();
  Array huge = make(fx::f32, std::vector<double>(static_cast<size_t>(x.size()), 1e6), x.shape());
  trainer.step(s, huge, y);
  EXPECT_TRUE(same_bits(s.params, params));
  EXPECT_TRUE(same_bits(s.opt_state, opt_state));
  EXPECT_EQ(scale(), std::make_tuple(65536.0, 0.0, 1.0));
  // And training goes on from there.
  double after = trainer.step(s, x, y).item();
  EXPECT_TRUE(std::isfinite(after));
  EXPECT_FALSE(same_bits(s.params, params));
  EXPECT_EQ(scale(), std::make_tuple(65536.0, 1.0, 1.0));
}

// f16_sums lets the step's products sum in f16 where a backend has f16 arithmetic (Vulkan with
// shaderFloat16): there the run differs from the f16 run without it but follows it closely;
// elsewhere it is that run, bit for bit. (Cooperative matrices, where on, take the larger
// products: the run then follows the other closely, whether or not a product summed in f16.)
TEST_P(MixedPrecision, F16SumsChangeTheRunOnlyWhereTheBackendSumsInF16) {
  nn::MixedPrecision policy = nn::MixedPrecision::named("f16");
  nn::Trainer plain = trainer_for(backend(), policy);
  policy.f16_sums = true;
  nn::Trainer allowed = trainer_for(backend(), policy);
  nn::TrainState a = plain.init(3), b = allowed.init(3);
  std::vector<double> want = step_losses(plain, a), got = step_losses(allowed, b);
  ASSERT_EQ(got.size(), want.size());
  fx::VulkanCapabilities caps;
  if (backend() == Backend::Vulkan) caps = fx::vulkan_device().capabilities;
  if (caps.float16) {
    if (!caps.cooperative_matrix) {
      EXPECT_NE(got, want) << "no product summed in f16";
    }
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.03 * want[i]) << "step " << i;
  } else {
    EXPECT_EQ(got, want);
  }
}

// Batch norm's statistics in an overflowing step would be infinite: a skipped step keeps the
// model state too, while a finite one updates it.
TEST_P(MixedPrecision, ASkippedStepKeepsTheModelState) {
  nn::Model model =
      nn::Sequential{nn::Flatten(), nn::Dense(784, 16), nn::BatchNorm1d(16), nn::ReLU(), nn::Dense(16, 10)};
  nn::Trainer trainer = trainer_for(backend(), nn::MixedPrecision::named("f16"), model);
  nn::TrainState s = trainer.init(5);
  auto [x, y] = fx::data::Loader(subset(), {.batch_size = 64}).batch(0);
  std::vector<Array> before;
  for (const Array& a : s.model_state) before.push_back(a.clone());
  Array huge = make(fx::f32, std::vector<double>(static_cast<size_t>(x.size()), 1e6), x.shape());
  trainer.step(s, huge, y);
  EXPECT_EQ(s.loss_scale[2].item(), 1.0);
  EXPECT_TRUE(same_bits(s.model_state, before));
  trainer.step(s, x, y);
  EXPECT_EQ(s.loss_scale[2].item(), 1.0);
  EXPECT_FALSE(same_bits(s.model_state, before));
  for (const Array& a : s.model_state)
    for (double v : a.to_doubles()) EXPECT_TRUE(std::isfinite(v));
}

TEST_P(MixedPrecision, TheLossScaleIsPartOfTheCheckpoint) {
  nn::Trainer trainer = trainer_for(backend(), nn::MixedPrecision::named("f16"));
  nn::TrainState s = trainer.init(5);
  auto [x, y] = fx::data::Loader(subset(), {.batch_size = 64}).batch(0);
  trainer.step(s, x, y);
  std::string path = temp_path("mixed_precision.safetensors");
  nn::save_checkpoint(path, trainer.model(), trainer.optimizer(), s);
  nn::TrainState back = trainer.init(9);
  nn::load_checkpoint(path, trainer.model(), trainer.optimizer(), back);
  EXPECT_TRUE(same_bits(back.loss_scale, s.loss_scale));
  EXPECT_TRUE(same_bits(back.params, s.params));
  // A run without loss scaling has no such entries, and does not read a file that has them.
  nn::Trainer plain = trainer_for(backend(), {});
  nn::TrainState p = plain.init(9);
  std::string m = error_message([&] { nn::load_checkpoint(path, plain.model(), plain.optimizer(), p); });
  EXPECT_NE(m.find("trainer.loss_scale"), std::string::npos) << m;
  std::filesystem::remove(path);
}

// Activations of about 0.02: in f16 arithmetic the backward pass of rsqrt(variance) (variance^-1.5
// / 2, about 1e5) and a softmax over scores masked with -1e30 would not be finite. Layer norm,
// batch norm and attention's softmax compute 16-bit inputs in f32, as torch.autocast runs them:
// their f16 gradients are finite and near the f64 ones.
TEST_P(MixedPrecision, NormalizationAndAttentionOfF16InputsHaveFiniteGradients) {
  nn::Model norm(nn::BatchNorm1d(16, {.affine = false}));
  auto loss = [&](Tensor x, Tensor w) {
    Tensor n = nn::layer_norm(x, 1, 1e-5) * w;
    std::vector<Tensor> state;  // f32 statistics for f16 inputs, as a Trainer keeps them
    for (const Array& a : norm.init_state(x.dtype() == fx::f64 ? fx::f64 : fx::f32)) state.push_back(fx::constant(a));
    Tensor b = norm.apply({}, state, x, {.training = true, .key = {}}).output * w;
    Tensor h = fx::reshape(x, {2, 4, 16});
    Tensor a = nn::scaled_dot_product_attention(h, h, h, {.causal = true});
    return fx::sum(fx::square(n)) + fx::sum(fx::square(b)) + fx::sum(a * fx::reshape(w, {1, 1, 16}) * 100.0);
  };
  std::vector<double> x = random_values(fx::f16, 8 * 16, -0.02, 0.02, 31), w = random_values(fx::f16, 16, 0.5, 1.5, 32);
  auto grads = [&](Backend b, DType dt) {
    return fx::jit([&](Tensor a, Tensor c) { return fx::grad(loss, {0})(a, c)[0]; }, b)(make(dt, x, {8, 16}),
                                                                                        make(dt, w, {16}));
  };
  std::vector<double> got = grads(backend(), fx::f16).to_doubles(), want = grads(Backend::Interp, fx::f64).to_doubles();
  double largest = 0;
  for (double v : want) largest = std::max(largest, std::abs(v));
  // Within 1% of the largest: f16's ulp is 2^-10 of each value, and the inputs were rounded.
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.01 * largest) << i;
}

TEST(MixedPrecisionPolicy, BadPoliciesAreErrors) {
  EXPECT_NE(error_message([] { nn::MixedPrecision::named("f8"); }).find("expected f32, bf16 or f16"),
            std::string::npos);
  nn::Trainer trainer = trainer_for(Backend::Interp, {.compute = fx::i32});
  nn::TrainState s = trainer.init(1);
  auto [x, y] = fx::data::Loader(subset(), {.batch_size = 8}).batch(0);
  std::string m = error_message([&] { trainer.step(s, x, y); });
  EXPECT_NE(m.find("MixedPrecision::compute is i32; expected bf16 or f16"), std::string::npos) << m;
  nn::Trainer bf16_sums = trainer_for(Backend::Interp, {.compute = fx::bf16, .f16_sums = true});
  s = bf16_sums.init(1);
  m = error_message([&] { bf16_sums.step(s, x, y); });
  EXPECT_NE(m.find("MixedPrecision::f16_sums is set with compute bf16; it applies to compute f16"), std::string::npos)
      << m;
}
