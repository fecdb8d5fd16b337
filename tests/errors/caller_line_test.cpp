// Errors name the user's line wherever the failing op is the library's: a layer's ops (the line
// of the model call), a compiled program's run-time checks (the jit's line, or the run's), an
// Array read, a Tensor kept past its trace (reported as the op it was used in).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fluxion/nn.h>

#include "common/test_util.h"

namespace fx = fluxion;
namespace nn = fluxion::nn;

namespace {

std::string here(int line) { return "caller_line_test.cpp:" + std::to_string(line) + ")"; }

fx::Array f32(fx::Shape s) { return fx::Array(fx::DType::f32, std::move(s)); }

TEST(CallerLine, LayerErrorsNameTheModelCall) {
  nn::Model model = nn::Sequential{nn::Dense(784, 32), nn::ReLU()};
  std::vector<fx::Array> params = model.init(0);
  int line = 0;
  auto forward = fx::jit(
      [&](const std::vector<fx::Tensor>& p, const fx::Tensor& x) {
        line = __LINE__ + 1;
        return model(p, x);
      },
      fx::Backend::Interp);
  std::string f64_input = fluxion::testing::error_message([&] { forward(params, fx::Array(fx::f64, {2, 784})); });
  EXPECT_NE(f64_input.find("op 'matmul'"), std::string::npos) << f64_input;
  EXPECT_NE(f64_input.find("f64[2,784]"), std::string::npos) << f64_input;
  EXPECT_NE(f64_input.find(here(line)), std::string::npos) << f64_input;
  EXPECT_EQ(f64_input.find("layers.cpp"), std::string::npos) << f64_input;
  std::string image = fluxion::testing::error_message([&] { forward(params, f32({2, 1, 28, 28})); });
  EXPECT_NE(image.find("Dense(784 -> 32)"), std::string::npos) << image;
  EXPECT_NE(image.find(here(line)), std::string::npos) << image;
}

TEST(CallerLine, TrainerErrorsNameTheStepCall) {
  nn::Model model = nn::Sequential{nn::Dense(4, 3)};
  nn::Trainer trainer(
      model, [](const fx::Tensor& o, const fx::Tensor& y) { return nn::softmax_cross_entropy(o, y); },
      nn::sgd({.lr = 0.1}), fx::Backend::Cpu);
  nn::TrainState state = trainer.init(0);
  fx::Array labels(std::vector<int32_t>{0, 1}, {2});
  int line = __LINE__ + 1;
  std::string m = fluxion::testing::error_message([&] { trainer.step(state, f32({2, 5}), labels); });
  EXPECT_NE(m.find(here(line)), std::string::npos) << m;
  line = __LINE__ + 1;
  m = fluxion::testing::error_message([&] { trainer.evaluate(state, f32({2, 5}), labels); });
  EXPECT_NE(m.find(here(line)), std::string::npos) << m;
}

TEST(CallerLine, RunTimeErrorsNameTheJitOrTheRun) {
  int jit_line = __LINE__ + 1;
  auto shrink = fx::jit([](const fx::Tensor& x0) {
    return fx::while_loop([](const fx::Tensor& x) { return x > 1.0; }, [](const fx::Tensor& x) { return x * 0.9; }, x0,
                          /*max_iters=*/5);
  });
  std::string m = fluxion::testing::error_message([&] { shrink(fx::Array::scalar(100.0f)); });
  EXPECT_NE(m.find("max_iters=5"), std::string::npos) << m;
  EXPECT_NE(m.find(here(jit_line)), std::string::npos) << m;

  fx::Compiled doubled = fx::jit([](const fx::Tensor& x) { return x * 2.0; }).lower(f32({3}));
  int line = __LINE__ + 1;
  m = fluxion::testing::error_message([&] { doubled.run({}); });
  EXPECT_NE(m.find("takes 1 input(s)"), std::string::npos) << m;
  EXPECT_NE(m.find(here(line)), std::string::npos) << m;
  std::vector<fx::Array> out = {f32({4})};
  line = __LINE__ + 1;
  m = fluxion::testing::error_message([&] { doubled.run_into({f32({3})}, out); });
  EXPECT_NE(m.find(here(line)), std::string::npos) << m;
}

TEST(CallerLine, ArrayReadsNameTheirLine) {
  fx::Array a = f32({3});
  int line = __LINE__ + 1;
  std::string m = fluxion::testing::error_message([&] { a.item(); });
  EXPECT_NE(m.find("f32[3], expected exactly one element"), std::string::npos) << m;
  EXPECT_NE(m.find(here(line)), std::string::npos) << m;
  line = __LINE__ + 1;
  m = fluxion::testing::error_message([&] { a.to_vector<int32_t>(); });
  EXPECT_NE(m.find(here(line)), std::string::npos) << m;
}

TEST(CallerLine, ATensorKeptPastItsTraceIsReportedAsTheOpUsingIt) {
  fx::Tensor leaked;
  fx::jit([&](const fx::Tensor& x) {
    leaked = x;
    return x * 2.0;
  })(f32({3}));
  std::string m = fluxion::testing::error_message([&] { fx::Tensor y = leaked * 3.0; });
  EXPECT_NE(m.find("op 'mul': no trace is active"), std::string::npos) << m;
}

TEST(CallerLine, GatherWithFloatIndicesShowsTheIndicesAsGiven) {
  std::string m = fluxion::testing::error_message([] {
    fx::jit([](const fx::Tensor& x, const fx::Tensor& i) { return fx::gather(x, i, 0); }, fx::Backend::Interp)(
        f32({5, 2}), f32({3}));
  });
  EXPECT_NE(m.find("indices must be i32, got f32[3] (x f32[5,2])"), std::string::npos) << m;
}

}  // namespace
