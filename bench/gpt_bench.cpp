// fluxion_gpt_bench: epoch times of gpt_train's model (a character-level GPT: 4 pre-norm causal
// Transformer blocks of width 128, 4 heads, dropout, AdamW with clipping) on the GPL-3 text, in
// Fluxion (one compiled training step per batch) and in libtorch (eager autograd +
// torch::optim::AdamW + clip_grad_norm_), with the same batches in the same order at 1 thread.
// Only the training loop is timed. Prints each system's min and median epoch time and their
// ratio. Run: build/bench/bench/fluxion_gpt_bench [--epochs N] [--context T] [--batch B] [--dropout P].
#include <fluxion/nn.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/gpt.h"
#include "timing.h"
#include "torch_threads.h"
#include "torch_transformer.h"

namespace {

namespace fx = fluxion;
namespace nn = fluxion::nn;

using Batches = std::vector<std::pair<fx::Array, fx::Array>>;

using bench::seconds_since;

struct TorchGpt : torch::nn::Module {
  torch::nn::Embedding tok{nullptr};
  torch::Tensor pos;
  std::vector<std::shared_ptr<bench::PreNormBlock>> blocks;
  torch::nn::LayerNorm ln{nullptr};
  torch::nn::Linear head{nullptr};
  double dropout;
  TorchGpt(const samples::GptOptions& g) : dropout(g.dropout) {
    tok = register_module("tok_emb", torch::nn::Embedding(g.vocab, g.embed));
    pos = register_parameter("pos_emb", torch::randn({g.context, g.embed}) * 0.02);
    for (int64_t i = 0; i < g.layers; ++i) {
      blocks.push_back(
          register_module("block" + std::to_string(i),
                          std::make_shared<bench::PreNormBlock>(g.embed, g.heads, 4 * g.embed, true, g.dropout)));
    }
    ln = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({g.embed})));
    head = register_module("head", torch::nn::Linear(g.embed, g.vocab));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    torch::Tensor h = torch::dropout(tok(x) + pos.slice(0, 0, x.size(1)), dropout, is_training());
    for (auto& b : blocks) h = b->forward(h);
    return head(ln(h));
  }
};

std::vector<double> time_fluxion(const samples::GptOptions& g, const Batches& batches, int epochs, double& last) {
  nn::Trainer trainer(
      samples::gpt_model(g), [](const fx::Tensor& o, const fx::Tensor& y) { return nn::softmax_cross_entropy(o, y); },
      samples::gpt_optimizer(1e-3, 0.1, 1.0, nn::Schedule()), fx::Backend::Cpu);
  nn::TrainState state = trainer.init(0);
  for (const auto* b : {&batches.front(), &batches.back()}) trainer.step(state, b->first, b->second);  // compiles
  std::vector<double> times;
  for (int e = 0; e < epochs; ++e) {
    auto t0 = std::chrono::steady_clock::now();
    fx::Array loss;
    for (const auto& [x, y] : batches) loss = trainer.step(state, x, y);
    last = loss.item();
    times.push_back(seconds_since(t0));
  }
  return times;
}

std::vector<double> time_torch(const samples::GptOptions& g, const Batches& batches, int epochs, double& last) {
  auto model = std::make_shared<TorchGpt>(g);
  model->train();
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3).betas({0.9, 0.95}).weight_decay(0.1));
  std::vector<std::pair<torch::Tensor, torch::Tensor>> data;
  for (const auto& [x, y] : batches) {
    auto to_long = [](const fx::Array& a) {
      std::vector<int32_t> v = a.to_vector<int32_t>();
      return torch::tensor(std::vector<int64_t>(v.begin(), v.end())).reshape({a.shape()[0], a.shape()[1]});
    };
    data.emplace_back(to_long(x), to_long(y));
  }
  std::vector<double> times;
  for (int e = 0; e < epochs; ++e) {
    auto t0 = std::chrono::steady_clock::now();
    for (const auto& [x, y] : data) {
      opt.zero_grad();
      torch::Tensor logits = model->forward(x);
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, g.vocab}), y.reshape({-1}));
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
      opt.step();
      last = loss.item<double>();
    }
    times.push_back(seconds_since(t0));
  }
  return times;
}

void report(const char* system, std::vector<double> t, double loss) {
  std::sort(t.begin(), t.end());
  std::printf("%-8s epoch min %.3f s  median %.3f s  (last loss %.3f)\n", system, t.front(), t[t.size() / 2], loss);
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = 3;
  samples::GptOptions g;
  g.context = 64;
  int64_t batch = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--epochs")) epochs = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--context")) g.context = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--batch")) batch = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dropout")) g.dropout = std::atof(argv[i + 1]);
  }
  bench::set_torch_threads(1);
  fx::set_num_threads(1);
  fx::data::CharText text = fx::data::CharText::load("/usr/share/common-licenses/GPL-3");
  fx::data::Dataset all = text.sequences(g.context);
  g.vocab = text.vocab_size();
  fx::data::Loader loader(fx::data::subset(all, 0, all.size() - all.size() / 10),
                          {.batch_size = batch, .shuffle = true, .seed = 0});
  Batches batches;
  for (int64_t i = 0; i < loader.size(); ++i) batches.push_back(loader.batch(i));
  std::printf(
      "gpt_train's model (context %lld, width %lld, %lld layers, %lld heads, dropout %.1f), %zu batches of %lld, 1 "
      "thread\n",
      static_cast<long long>(g.context), static_cast<long long>(g.embed), static_cast<long long>(g.layers),
      static_cast<long long>(g.heads), g.dropout, batches.size(), static_cast<long long>(batch));
  double lf = 0, lt = 0;
  std::vector<double> f = time_fluxion(g, batches, epochs, lf), t = time_torch(g, batches, epochs, lt);
  report("fluxion", f, lf);
  report("libtorch", t, lt);
  std::sort(f.begin(), f.end());
  std::sort(t.begin(), t.end());
  std::printf("fluxion / libtorch (median epoch): %.2f\n", f[f.size() / 2] / t[t.size() / 2]);
}
