// Writes libtorch's values and gradients of the nn layers on fixed inputs into a safetensors
// fixture (tests/nn/fixtures/layers.safetensors), so that `make test` checks Fluxion's layers
// against PyTorch without needing libtorch. Everything is float64. Per case `c`:
//   c.x (input), c.param.<name> (PyTorch's named_parameters, in order), c.weights (the upstream
//   gradient: loss = sum(y * weights)), c.y (output), c.grad.x, c.grad.<name>, and for stateful
//   layers c.state.<name> after the step; metadata "c.names" lists the parameter names.
// Run: make layer-fixtures (build/bench/bench/fluxion_layer_fixtures tests/nn/fixtures/layers.safetensors).
#include <torch/torch.h>

#include <fluxion/safetensors.h>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "torch_transformer.h"

namespace {

fluxion::NamedArrays tensors;
std::map<std::string, std::string> metadata;

void put(const std::string& name, const torch::Tensor& t) {
  torch::Tensor c = t.detach().contiguous();
  fluxion::Shape shape(c.sizes().begin(), c.sizes().end());
  if (c.scalar_type() == torch::kLong || c.scalar_type() == torch::kInt) {
    torch::Tensor i = c.to(torch::kInt);
    tensors.emplace_back(
        name, fluxion::Array(std::vector<int32_t>(i.data_ptr<int32_t>(), i.data_ptr<int32_t>() + i.numel()), shape));
  } else if (c.scalar_type() == torch::kBool) {
    std::vector<bool> v;
    for (int64_t k = 0; k < c.numel(); ++k) v.push_back(c.view(-1)[k].item<bool>());
    tensors.emplace_back(name, fluxion::Array(v, shape));
  } else {
    torch::Tensor d = c.to(torch::kDouble);
    tensors.emplace_back(
        name, fluxion::Array(std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel()), shape));
  }
}

// Runs y = forward(x) with random parameters, records values and gradients under `c`.
template <class Forward>
void record(const std::string& c, torch::nn::Module& module, torch::Tensor x, Forward forward) {
  std::string names;
  for (auto& p : module.named_parameters()) {
    torch::NoGradGuard no_grad;
    p.value().copy_(torch::randn_like(p.value()) * 0.5);  // not the defaults: every entry matters
  }
  for (auto& p : module.named_parameters()) {
    put(c + ".param." + p.key(), p.value());
    names += (names.empty() ? "" : ",") + p.key();
  }
  metadata[c + ".names"] = names;
  put(c + ".x", x);
  bool float_input = x.is_floating_point();
  if (float_input) x.set_requires_grad(true);
  torch::Tensor y = forward(x);
  torch::Tensor w = torch::randn_like(y);
  put(c + ".y", y);
  put(c + ".weights", w);
  (y * w).sum().backward();
  if (float_input) put(c + ".grad.x", x.grad());
  for (auto& p : module.named_parameters()) put(c + ".grad." + p.key(), p.value().grad());
  for (auto& b : module.named_buffers()) {
    if (b.key().find("num_batches_tracked") == std::string::npos) put(c + ".state." + b.key(), b.value());
  }
}

struct Empty : torch::nn::Module {};
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT.safetensors\n", argv[0]);
    return 2;
  }
  torch::manual_seed(20261126);
  torch::set_default_dtype(caffe2::TypeMeta::Make<double>());
  {
    Empty none;
    record("gelu", none, torch::randn({4, 5}) * 2, [](torch::Tensor x) { return torch::gelu(x); });
    record("gelu_tanh", none, torch::randn({4, 5}) * 2, [](torch::Tensor x) { return torch::gelu(x, "tanh"); });
    record("silu", none, torch::randn({4, 5}) * 2, [](torch::Tensor x) { return torch::silu(x); });
  }
  {
    torch::nn::LayerNorm ln(torch::nn::LayerNormOptions({4, 6}));
    record("layer_norm", *ln, torch::randn({3, 4, 6}), [&](torch::Tensor x) { return ln(x); });
  }
  {
    torch::nn::BatchNorm1d bn(torch::nn::BatchNorm1dOptions(5).momentum(0.2));
    {
      torch::NoGradGuard g;
      bn->running_mean.copy_(torch::randn({5}));
      bn->running_var.copy_(torch::rand({5}) + 0.5);
    }
    put("batch_norm1d.state_before.running_mean", bn->running_mean);
    put("batch_norm1d.state_before.running_var", bn->running_var);
    bn->train();
    record("batch_norm1d", *bn, torch::randn({8, 5, 3}), [&](torch::Tensor x) { return bn(x); });
    bn->eval();
    torch::Tensor x = torch::randn({4, 5, 3});
    put("batch_norm1d.eval.x", x);
    put("batch_norm1d.eval.y", bn(x));
  }
  {
    torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(3));
    put("batch_norm2d.state_before.running_mean", bn->running_mean);
    put("batch_norm2d.state_before.running_var", bn->running_var);
    bn->train();
    record("batch_norm2d", *bn, torch::randn({4, 3, 5, 5}), [&](torch::Tensor x) { return bn(x); });
  }
  {
    torch::nn::Embedding emb(10, 4);
    record("embedding", *emb, torch::randint(0, 10, {3, 5}), [&](torch::Tensor x) { return emb(x); });
  }
  for (bool causal : {false, true}) {
    torch::nn::MultiheadAttention mha(torch::nn::MultiheadAttentionOptions(8, 2));
    torch::Tensor padding = torch::zeros({2, 5}, torch::kBool);
    padding[1][3] = true;
    padding[1][4] = true;
    std::string c = causal ? "mha_causal" : "mha_padding";
    if (!causal) put(c + ".key_padding", padding);
    record(c, *mha, torch::randn({2, 5, 8}), [&](torch::Tensor x) {
      torch::Tensor t = x.transpose(0, 1);  // [S, B, E]
      torch::Tensor mask = causal ? bench::causal_mask(5) : torch::Tensor();
      return std::get<0>(mha->forward(t, t, t, causal ? torch::Tensor() : padding, false, mask)).transpose(0, 1);
    });
  }
  {
    auto block = std::make_shared<bench::PreNormBlock>(8, 2, 16, true);
    record("transformer_block", *block, torch::randn({2, 5, 8}), [&](torch::Tensor x) { return block->forward(x); });
  }
  {
    auto block = std::make_shared<bench::PreNormDecoderBlock>(8, 2, 16);
    torch::Tensor memory = torch::randn({2, 4, 8});
    put("transformer_decoder_block.memory", memory);
    record("transformer_decoder_block", *block, torch::randn({2, 5, 8}),
           [&](torch::Tensor x) { return block->forward(x, memory); });
  }
  fluxion::save_safetensors(argv[1], tensors, metadata);
  std::printf("wrote %zu tensors to %s\n", tensors.size(), argv[1]);
}
