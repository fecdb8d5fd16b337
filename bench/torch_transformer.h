// libtorch's counterparts of Fluxion's attention layers, for the layer fixtures and the GPT
// benchmark: PyTorch's TransformerEncoderLayer with norm_first=True and batch_first=True, built
// from its parts (libtorch's C++ layer has neither option), with its parameter names.
#pragma once

#include <torch/torch.h>

#include <cmath>

namespace bench {

// A causal attention mask for libtorch's C++ MultiheadAttention, which adds attn_mask to the
// scores (a bool mask would add 1, not mask): -inf above the diagonal.
inline torch::Tensor causal_mask(int64_t s) {
  return torch::zeros({s, s}).masked_fill(torch::ones({s, s}, torch::kBool).triu(1), -INFINITY);
}

struct PreNormBlock : torch::nn::Module {
  torch::nn::MultiheadAttention self_attn{nullptr};
  torch::nn::Linear linear1{nullptr}, linear2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  bool causal;
  double dropout;
  PreNormBlock(int64_t e, int64_t heads, int64_t ff, bool causal_, double dropout_ = 0)
      : causal(causal_), dropout(dropout_) {
    self_attn = register_module(
        "self_attn", torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(e, heads).dropout(dropout)));
    linear1 = register_module("linear1", torch::nn::Linear(e, ff));
    linear2 = register_module("linear2", torch::nn::Linear(ff, e));
    norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({e})));
    norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({e})));
  }
  torch::Tensor forward(torch::Tensor x) {  // x [B, S, E]
    torch::Tensor h = norm1(x).transpose(0, 1);
    int64_t s = x.size(1);
    torch::Tensor mask = causal ? causal_mask(s).to(x.dtype()) : torch::Tensor();
    torch::Tensor a = std::get<0>(self_attn->forward(h, h, h, torch::Tensor(), false, mask)).transpose(0, 1);
    x = x + torch::dropout(a, dropout, is_training());
    torch::Tensor inner = torch::dropout(torch::gelu(linear1(norm2(x))), dropout, is_training());
    return x + torch::dropout(linear2(inner), dropout, is_training());
  }
};

// PyTorch's TransformerDecoderLayer with norm_first=True and batch_first=True (GELU), built from
// its parts, with its parameter names; causal self-attention.
struct PreNormDecoderBlock : torch::nn::Module {
  torch::nn::MultiheadAttention self_attn{nullptr}, multihead_attn{nullptr};
  torch::nn::Linear linear1{nullptr}, linear2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
  PreNormDecoderBlock(int64_t e, int64_t heads, int64_t ff) {
    self_attn =
        register_module("self_attn", torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(e, heads)));
    multihead_attn = register_module("multihead_attn",
                                     torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(e, heads)));
    linear1 = register_module("linear1", torch::nn::Linear(e, ff));
    linear2 = register_module("linear2", torch::nn::Linear(ff, e));
    norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({e})));
    norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({e})));
    norm3 = register_module("norm3", torch::nn::LayerNorm(torch::nn::LayerNormOptions({e})));
  }
  torch::Tensor forward(torch::Tensor x, torch::Tensor memory) {  // x [B, S, E], memory [B, M, E]
    torch::Tensor h = norm1(x).transpose(0, 1), m = memory.transpose(0, 1);
    torch::Tensor mask = causal_mask(x.size(1)).to(x.dtype());
    x = x + std::get<0>(self_attn->forward(h, h, h, torch::Tensor(), false, mask)).transpose(0, 1);
    torch::Tensor q = norm2(x).transpose(0, 1);
    x = x + std::get<0>(multihead_attn->forward(q, m, m, torch::Tensor(), false)).transpose(0, 1);
    return x + linear2(torch::gelu(linear1(norm3(x))));
  }
};

}  // namespace bench
