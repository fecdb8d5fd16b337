// Loading a model from a file written elsewhere: a torch-style state_dict (F16, BF16 and I64
// tensors, a "model." prefix, buffers beside the parameters), read strictly (one Error listing
// every problem) or not (a report, and fresh values for what is missing or mismatched); prefix
// maps; a checkpoint's parameters and model state read by the same loader.
#include <bit>

#include "common/test_names.h"
#include "data/data_test_util.h"
#include "data/safetensors_builder.h"

namespace nn = fluxion::nn;

namespace {

// The BF16 bits of an f32 that BF16 holds exactly.
uint16_t bf16(float x) { return static_cast<uint16_t>(std::bit_cast<uint32_t>(x) >> 16); }

std::vector<float> floats(const Array& a) { return a.to_vector<float>(); }

}  // namespace

class ModelLoading : public FileTest {
 protected:
  // Parameters 0.weight [3,4], 0.bias [3], 1.weight [3], 1.bias [3], 2.weight [2,3], 2.bias [2];
  // state 1.running_mean [3], 1.running_var [3].
  nn::Model model = nn::Sequential{nn::Dense(4, 3), nn::BatchNorm1d(3), nn::Dense(3, 2)};

  // A state_dict as torch would save it from a wrapper module: every name under "model.", the
  // first layer in half precision, batch norm's step counter as I64, the last layer's weight of
  // another shape and its bias absent, and a head the model does not have.
  std::string torch_file() {
    SafetensorsBuilder f;
    f.add("model.0.weight", "F16", {3, 4},
          std::vector<uint16_t>{0x3c00, 0xc000, 0x3800, 0x3555, 0, 0x8000, 0x3c00, 0x3c00, 0x4000, 0x4200, 0x4400,
                                0x4500})
        .add("model.0.bias", "BF16", {3}, std::vector<uint16_t>{bf16(0.5f), bf16(-1.25f), bf16(3.0f)})
        .add("model.1.weight", "F32", {3}, std::vector<float>{1, 1, 2})
        .add("model.1.bias", "F32", {3}, std::vector<float>{0, 0.5f, 0})
        .add("model.1.running_mean", "F32", {3}, std::vector<float>{0.1f, 0.2f, 0.3f})
        .add("model.1.running_var", "F32", {3}, std::vector<float>{1.5f, 2.5f, 3.5f})
        .add("model.1.num_batches_tracked", "I64", {}, std::vector<int64_t>{7})
        .add("model.2.weight", "F32", {3, 3}, std::vector<float>(9, 0.25f))
        .add("lm_head.weight", "F32", {2}, std::vector<float>{9, 9});
    std::string p = path("torch.safetensors");
    write_bytes(p, f.bytes());
    return p;
  }
};

TEST_F(ModelLoading, NonStrictLoadsWhatMatchesAndReportsTheRest) {
  std::string p = torch_file();
  nn::LoadReport report;
  nn::LoadedModel m =
      nn::load_model(p, model, {.strict = false, .rename_prefixes = {{"model.", ""}}, .seed = 5}, &report);
  ASSERT_EQ(m.params.size(), 6u);
  ASSERT_EQ(m.state.size(), 2u);
  EXPECT_EQ(m.params[0].type(), (fx::TensorType{fx::f32, {3, 4}}));
  EXPECT_EQ(floats(m.params[0]), (std::vector<float>{1, -2, 0.5f, 0.333251953125f, 0, -0.0f, 1, 1, 2, 3, 4, 5}));
  EXPECT_EQ(floats(m.params[1]), (std::vector<float>{0.5f, -1.25f, 3}));
  EXPECT_EQ(floats(m.params[3]), (std::vector<float>{0, 0.5f, 0}));
  // The mismatched weight and the missing bias keep model.init(seed)'s values.
  std::vector<Array> fresh = model.init(5);
  EXPECT_EQ(m.params[4].to_doubles(), fresh[4].to_doubles());
  EXPECT_EQ(m.params[5].to_doubles(), fresh[5].to_doubles());
  EXPECT_EQ(floats(m.state[0]), (std::vector<float>{0.1f, 0.2f, 0.3f}));
  EXPECT_EQ(floats(m.state[1]), (std::vector<float>{1.5f, 2.5f, 3.5f}));
  EXPECT_EQ(report.missing, (std::vector<std::string>{"2.bias"}));
  EXPECT_EQ(report.unexpected, (std::vector<std::string>{"model.1.num_batches_tracked", "lm_head.weight"}));
  EXPECT_EQ(report.mismatched,
            (std::vector<std::string>{"'2.weight' (in the file 'model.2.weight') is f32[3,3], expected f32[2,3]"}));
  // Only the parameters: the state's names are neither loaded nor reported.
  nn::LoadReport params_report;
  std::vector<Array> params =
      nn::load_parameters(p, model, {.strict = false, .rename_prefixes = {{"model.", ""}}, .seed = 5}, &params_report);
  ASSERT_EQ(params.size(), 6u);
  EXPECT_EQ(floats(params[1]), (std::vector<float>{0.5f, -1.25f, 3}));
  EXPECT_EQ(params_report.unexpected, report.unexpected);
  EXPECT_EQ(params_report.missing, report.missing);
}

TEST_F(ModelLoading, StrictModeRaisesOneErrorListingEveryProblem) {
  std::string p = torch_file();
  nn::LoadReport report;
  std::string m = error_of([&] { nn::load_model(p, model, {.rename_prefixes = {{"model.", ""}}}, &report); });
  for (const char* part : {"nn::load_model", "torch.safetensors", "missing '2.bias' f32[2]",
                           "'2.weight' (in the file 'model.2.weight') is f32[3,3], expected f32[2,3]",
                           "unexpected 'lm_head.weight' f32[2]", "unexpected 'model.1.num_batches_tracked' i32[]"})
    EXPECT_NE(m.find(part), std::string::npos) << "want '" << part << "' in: " << m;
  EXPECT_EQ(report.missing, (std::vector<std::string>{"2.bias"}));  // filled before the Error
  // Without the prefix map nothing matches: every name is missing, every tensor unexpected.
  std::string all = error_of([&] { nn::load_parameters(p, model); });
  EXPECT_NE(all.find("nn::load_parameters"), std::string::npos) << all;
  EXPECT_NE(all.find("missing '0.weight' f32[3,4]"), std::string::npos) << all;
  EXPECT_NE(all.find("unexpected 'model.0.weight' f16[3,4]"), std::string::npos) << all;
}

TEST_F(ModelLoading, PrefixMapsMoveBlocksAndTheFirstMatchingPairApplies) {
  nn::Model small = nn::Sequential{nn::Dense(2, 2), nn::Tanh(), nn::Dense(2, 1)};
  SafetensorsBuilder f;
  f.add("encoder.layers.0.weight", "F32", {2, 2}, std::vector<float>{1, 2, 3, 4})
      .add("encoder.layers.0.bias", "BF16", {2}, std::vector<uint16_t>{bf16(-1), bf16(1)})
      .add("encoder.head.weight", "F16", {1, 2}, std::vector<uint16_t>{0x3800, 0xb800})
      .add("encoder.head.bias", "F32", {1}, std::vector<float>{0.75f});
  write_bytes(path("moved.safetensors"), f.bytes());
  // "encoder.head." is tried before the wider "encoder.": the head becomes layer 2.
  std::vector<Array> p = nn::load_parameters(
      path("moved.safetensors"), small,
      {.rename_prefixes = {{"encoder.layers.0.", "0."}, {"encoder.head.", "2."}, {"encoder.", "unused."}}});
  EXPECT_EQ(floats(p[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(floats(p[1]), (std::vector<float>{-1, 1}));
  EXPECT_EQ(floats(p[2]), (std::vector<float>{0.5f, -0.5f}));
  EXPECT_EQ(floats(p[3]), (std::vector<float>{0.75f}));
  // Two names read as one is an Error in either mode.
  f.add("0.bias", "F32", {2}, std::vector<float>{0, 0});
  write_bytes(path("twice.safetensors"), f.bytes());
  std::string m = error_of([&] {
    nn::load_parameters(path("twice.safetensors"), small,
                        {.strict = false, .rename_prefixes = {{"encoder.layers.0.", "0."}}});
  });
  EXPECT_NE(m.find("'encoder.layers.0.bias' and '0.bias' are both read as '0.bias'"), std::string::npos) << m;
}

TEST_F(ModelLoading, MissingStateTakesItsInitialValues) {
  SafetensorsBuilder f;
  std::vector<Array> init = model.init(0);
  std::vector<std::string> names = model.param_names();
  for (size_t i = 0; i < init.size(); ++i) f.add(names[i], "F32", init[i].shape(), init[i].to_vector<float>());
  f.add("1.running_mean", "F32", {3}, std::vector<float>{4, 5, 6});
  write_bytes(path("no_var.safetensors"), f.bytes());
  nn::LoadReport report;
  nn::LoadedModel m = nn::load_model(path("no_var.safetensors"), model, {.strict = false}, &report);
  EXPECT_EQ(floats(m.state[0]), (std::vector<float>{4, 5, 6}));
  EXPECT_EQ(floats(m.state[1]), (std::vector<float>{1, 1, 1}));  // BatchNorm's running_var starts at ones
  EXPECT_EQ(report.missing, (std::vector<std::string>{"1.running_var"}));
  EXPECT_TRUE(report.unexpected.empty());
  EXPECT_TRUE(report.mismatched.empty());
  // Strict, the missing state is an Error; load_parameters does not read the state at all.
  EXPECT_NE(error_of([&] { nn::load_model(path("no_var.safetensors"), model); }).find("missing '1.running_var' f32[3]"),
            std::string::npos);
  EXPECT_EQ(nn::load_parameters(path("no_var.safetensors"), model).size(), 6u);
}

TEST_F(ModelLoading, ACheckpointLoadsStrictlyWithItsModelState) {
  nn::Optimizer opt = nn::adam({.lr = 0.01});
  nn::TrainState s;
  s.params = model.init(3);
  s.opt_state = opt.init(s.params);
  s.model_state = {Array(std::vector<float>{1, 2, 3}, {3}), Array(std::vector<float>{4, 5, 6}, {3})};
  s.step = Array(std::vector<int32_t>{11}, {});
  s.key = Array(std::vector<int32_t>{1, 2}, {2});
  nn::save_checkpoint(path("ck.safetensors"), model, opt, s);
  nn::LoadReport report;
  nn::LoadedModel m = nn::load_model(path("ck.safetensors"), model, {}, &report);  // optimizer.* and trainer.* ignored
  for (size_t i = 0; i < s.params.size(); ++i) EXPECT_EQ(m.params[i].to_doubles(), s.params[i].to_doubles());
  EXPECT_EQ(floats(m.state[1]), (std::vector<float>{4, 5, 6}));
  EXPECT_TRUE(report.missing.empty() && report.unexpected.empty() && report.mismatched.empty());
  // A checkpoint whose first weight was stored in F16 loads into the f32 model.
  fx::NamedArrays entries = fx::load_safetensors(path("ck.safetensors"));
  SafetensorsBuilder f;
  f.add("0.weight", "F16", {3, 4}, std::vector<uint16_t>(12, 0x3c00));
  for (const auto& [name, a] : entries) {
    if (name == "0.weight") continue;
    std::string raw(static_cast<size_t>(a.size() * fx::dtype_size(a.dtype())), '\0');
    if (!raw.empty()) std::memcpy(raw.data(), a.data(), raw.size());
    f.add_raw(name, a.dtype() == fx::f32 ? "F32" : "I32", a.shape(), raw);
  }
  write_bytes(path("half.safetensors"), f.bytes());
  EXPECT_EQ(floats(nn::load_parameters(path("half.safetensors"), model)[0]), std::vector<float>(12, 1.0f));
}
