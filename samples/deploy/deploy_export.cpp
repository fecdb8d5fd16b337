// Compiles and saves the programs deploy_run runs without the compiler (docs/deploy.md): the
// MLP's training step and its classifier, and W6's LSTM training step; writes their data and,
// from the same steps run here, the results deploy_run must reproduce bitwise.
//
//   deploy_export [--out DIR] [--limit N] [--steps K] [--backend cpu|vulkan]
#include <fluxion/fluxion.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "arrays_file.h"
#include "common/classifier.h"
#include "common/cli.h"
#include "common/stacked_lstm.h"
#include "mlp.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;

namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

Array random_array(fx::Shape shape, double scale, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, static_cast<float>(scale));
  std::vector<float> v(static_cast<size_t>(fx::numel(shape)));
  for (float& x : v) x = normal(rng);
  return Array(v, std::move(shape));
}

// Fashion-MNIST's first `n` images of `split`, flattened to [n, 784], and their labels.
std::pair<Array, Array> images(const std::string& split, int64_t n) {
  fx::data::Dataset d = fx::data::subset(samples::load_fashion_mnist(split), 0, n);
  Array x = Array::empty(fx::f32, {d.size(), 784});
  std::memcpy(x.mutable_data(), d.inputs.data(), static_cast<size_t>(x.size() * 4));
  return {x, d.targets};
}

std::vector<Tensor> mlp_step(const std::vector<Tensor>& p, const Tensor& x, const Tensor& y, const Tensor& rate) {
  auto loss = [&](const std::vector<Tensor>& q) {
    Tensor h = fx::relu(fx::matmul(x, q[0]) + q[1]);
    return fx::nn::softmax_cross_entropy(fx::matmul(h, q[2]) + q[3], y);
  };
  auto [l, g] = fx::value_and_grad(loss, {0})(p);
  std::vector<Tensor> out;
  for (size_t i = 0; i < p.size(); ++i) out.push_back(p[i] - rate * g[i]);
  out.push_back(l);
  return out;
}

Tensor mlp_classify(const std::vector<Tensor>& p, const Tensor& x) {
  return fx::argmax(fx::matmul(fx::relu(fx::matmul(x, p[0]) + p[1]), p[2]) + p[3], 1);
}

// Flat signatures for save: the parameters, then the other inputs.
fx::Compiled lower_flat(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& f,
                        const std::vector<Array>& example, fx::Backend backend) {
  std::vector<fx::TensorType> types;
  for (const Array& a : example) types.push_back(a.type());
  return fx::compile_flat(f, types, backend);
}

int run(int argc, char** argv) {
  auto start = std::chrono::steady_clock::now();
  std::string out = "deploy";
  std::string backend_name = "cpu";
  int64_t limit = 4096, steps = 64;
  samples::Cli cli("deploy_export", "Compiles and saves the programs deploy_run runs without the compiler.");
  cli.add("--out", &out, "the directory to write the programs and data to");
  cli.add("--limit", &limit, "training images");
  cli.add("--steps", &steps, "training steps to run here, which deploy_run reproduces");
  cli.add_choice("--backend", &backend_name, {"cpu", "vulkan"}, "the backend the MLP's programs are compiled for");
  cli.parse(argc, argv);
  fx::Backend backend = backend_name == "vulkan" ? fx::Backend::Vulkan : fx::Backend::Cpu;
  std::filesystem::create_directories(out);
  std::mt19937 rng(1234);
  std::map<std::string, Array> data;
  std::tie(data["train_x"], data["train_y"]) = images("train", limit);
  std::tie(data["test_x"], data["test_y"]) = images("test", 1000);
  data["w1"] = random_array({784, 128}, std::sqrt(2.0 / 784), rng);
  data["b1"] = Array(std::vector<float>(128, 0.0f), {128});
  data["w2"] = random_array({128, 10}, std::sqrt(2.0 / 128), rng);
  data["b2"] = Array(std::vector<float>(10, 0.0f), {10});
  std::vector<Array> params{data["w1"], data["b1"], data["w2"], data["b2"]};

  auto compile_start = std::chrono::steady_clock::now();
  auto step_args = params;
  step_args.push_back(deploy::rows(data["train_x"], 0, deploy::kBatch));
  step_args.push_back(deploy::rows(data["train_y"], 0, deploy::kBatch));
  step_args.push_back(Array(std::vector<float>{0.05f}, {}));
  fx::Compiled step = lower_flat(
      [](const std::vector<Tensor>& a) {
        return mlp_step({a[0], a[1], a[2], a[3]}, a[4], a[5], a[6]);
      },
      step_args, backend);
  auto classify_args = params;
  classify_args.push_back(data["test_x"]);
  fx::Compiled classify = lower_flat(
      [](const std::vector<Tensor>& a) {
        return std::vector<Tensor>{mlp_classify({a[0], a[1], a[2], a[3]}, a[4])};
      },
      classify_args, backend);
  std::map<std::string, Array> trained = data;
  deploy::train(step, trained, 0, 1);
  std::printf(
      "deploy_export: MLP: programs traced and compiled and the first training step run in %.2f ms (%.2f ms after "
      "start)\n",
      ms_since(compile_start), ms_since(start));
  step.save(out + "/mlp_step.fxa", {{"w1", "b1", "w2", "b2", "x", "y", "rate"}, {"w1", "b1", "w2", "b2", "loss"}});
  classify.save(out + "/mlp_classify.fxa", {{"w1", "b1", "w2", "b2", "x"}, {"label"}});
  deploy::write_arrays(out + "/mlp_data.safetensors", data);
  double loss = deploy::train(step, trained, 1, steps - 1);
  std::map<std::string, Array> expected;
  for (const std::string& p : deploy::kParameters) expected[p] = trained.at(p);
  std::printf("deploy_export: %lld steps: loss %.6f, test accuracy %.4f\n", static_cast<long long>(steps), loss,
              deploy::accuracy(classify, trained));

  // W6: two stacked LSTM layers, input 64, hidden 64, batch 256, 50 steps.
  const int64_t T = 50, I = 64, H = 64, B = 256;
  std::vector<Array> lstm;
  for (int layer = 0; layer < 2; ++layer) {
    double scale = 1.0 / std::sqrt(static_cast<double>(H));
    lstm.push_back(random_array({4 * H, layer == 0 ? I : H}, scale, rng));
    lstm.push_back(random_array({4 * H, H}, scale, rng));
    lstm.push_back(random_array({4 * H, 1}, scale, rng));
    lstm.push_back(random_array({4 * H, 1}, scale, rng));
  }
  lstm.push_back(random_array({T, I, B}, 1.0, rng));
  fx::Compiled lstm_step = lower_flat(
      [](const std::vector<Tensor>& a) {
        auto [loss, next] = samples::stacked_lstm_step({a.begin(), a.begin() + 8}, a[8], 1e-5f);
        next.push_back(loss);
        return next;
      },
      lstm, fx::Backend::Cpu);
  lstm_step.save(out + "/lstm_step.fxa");
  std::vector<Array> lstm_out = lstm_step.run(lstm);
  for (size_t i = 0; i < lstm.size(); ++i) expected["lstm_in" + std::to_string(i)] = lstm[i];
  for (size_t i = 0; i < lstm_out.size(); ++i) expected["lstm_out" + std::to_string(i)] = lstm_out[i];
  expected["steps"] = Array(std::vector<float>{static_cast<float>(steps)}, {});
  deploy::write_arrays(out + "/expected.safetensors", expected);
  std::printf("deploy_export: wrote %s/{mlp_step,mlp_classify,lstm_step}.fxa and their data\n", out.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    return samples::report_error("deploy_export", e);
  }
}
