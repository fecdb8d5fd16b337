// The worked examples of docs/nn.md, as written there: a custom stateful layer and a custom
// gradient transformation, trained through nn::Trainer.
#include <gtest/gtest.h>

#include "common/test_names.h"
#include "nn/nn_test_util.h"

namespace nn = fluxion::nn;

namespace {

class Centre : public nn::Layer {
 public:
  explicit Centre(int64_t features) : n_(features) {}
  std::vector<nn::ParamSpec> state() const override { return {{"running_mean", {n_}, nn::Initializer::zeros()}}; }
  fx::Tensor apply(std::span<const fx::Tensor>, const fx::Tensor& x, nn::Context& ctx) const override {
    nn::expect_input(describe(), x, 2, 1, n_);
    if (!ctx.training) return x - ctx.state[0];
    fx::Tensor batch = fx::mean(x, {0});
    ctx.new_state = {ctx.state[0] * 0.9 + batch * 0.1};
    return x - batch;
  }
  std::string describe() const override { return "Centre(" + std::to_string(n_) + ")"; }

 private:
  int64_t n_;
};

nn::GradientTransformation sign_rate(double up, double down) {
  nn::GradientTransformation t;
  t.name = "sign_rate";
  t.hyperparameters = {{"up", up}, {"down", down}};
  t.init = [](const std::vector<fx::Array>& ps) {  // previous gradient, then step size
    std::vector<fx::Array> s;
    for (const auto& p : ps) s.emplace_back(p.dtype(), p.shape());
    for (const auto& p : ps) s.push_back(fx::Array(std::vector<float>(static_cast<size_t>(p.size()), 1.0f), p.shape()));
    return s;
  };
  t.state_names = [](const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const auto& n : names) out.push_back("sign_rate.prev." + n);
    for (const auto& n : names) out.push_back("sign_rate.size." + n);
    return out;
  };
  t.update = [](const nn::TransformInputs& in) {
    size_t n = in.updates.size();
    std::vector<fx::Tensor> out, prev, size;
    for (size_t i = 0; i < n; ++i) {
      const fx::Tensor& g = in.updates[i];
      fx::Tensor agree = fx::gt(g * in.state[i], fx::zeros_like(g));
      fx::Tensor s =
          in.state[n + i] * fx::where(agree, fx::cast(in.hyper[0], g.dtype()), fx::cast(in.hyper[1], g.dtype()));
      out.push_back(fx::sign(g) * s);
      prev.push_back(g);
      size.push_back(s);
    }
    prev.insert(prev.end(), size.begin(), size.end());
    return nn::TransformResult{out, prev};
  };
  return t;
}

}  // namespace

class WorkedExamples : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(WorkedExamples);

TEST_P(WorkedExamples, CustomLayerAndCustomOptimizerTrain) {
  nn::Model model(nn::Sequential{Centre(4), nn::Dense(4, 1)});
  nn::Optimizer opt = nn::chain({sign_rate(1.2, 0.5), nn::scale_by_learning_rate(1e-2)});
  nn::Trainer trainer(
      model, [](const Tensor& o, const Tensor& y) { return nn::mse(o, y); }, opt, backend());
  nn::TrainState state = trainer.init(0);
  // y = x . (1, -2, 0.5, 3) + 5 on inputs centred on (1, 1, 1, 1): the layer learns the mean.
  std::vector<double> xs = random_doubles(64 * 4, 0, 2, 1), ys;
  for (int r = 0; r < 64; ++r) {
    const double* x = &xs[static_cast<size_t>(r) * 4];
    ys.push_back(x[0] - 2 * x[1] + 0.5 * x[2] + 3 * x[3] + 5);
  }
  Array x = make(DType::f32, xs, {64, 4}), y = make(DType::f32, ys, {64, 1});
  double first = trainer.step(state, x, y).item(), last = first;
  for (int i = 0; i < 300; ++i) last = trainer.step(state, x, y).item();
  EXPECT_LT(last, 0.05 * first) << first << " -> " << last;
  for (double m : state.model_state[0].to_doubles()) EXPECT_NEAR(m, 1.0, 0.2) << "the running mean of x";
  EXPECT_EQ(opt.describe(), "chain(sign_rate(up=1.2, down=0.5), scale_by_learning_rate(lr=0.01))");
}
