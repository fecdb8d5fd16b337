// Attention layers: multi-head attention with PyTorch's parameter layout, and a pre-norm
// Transformer block (PyTorch's TransformerEncoderLayer with norm_first=True, batch_first=True),
// whose causal form is a GPT-style decoder block.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fluxion/nn/layer.h"
#include "fluxion/nn/layers.h"
#include "fluxion/nn/normalization.h"

namespace fluxion::nn {

// Parameters: in_proj_weight [3E, E] (the query, key and value projections stacked),
// in_proj_bias [3E], out_proj.weight [E, E], out_proj.bias [E]; initialised as PyTorch does
// (Glorot-uniform in_proj_weight, zero biases). As a layer it is self-attention over x [B, S, E].
class MultiHeadAttention : public Layer {
 public:
  struct Options {
    bool bias = true;
    double dropout = 0;   // on the attention weights, in training mode
    bool causal = false;  // self-attention: position i attends to positions <= i
  };
  MultiHeadAttention(int64_t embed, int64_t heads) : MultiHeadAttention(embed, heads, Options{}) {}
  MultiHeadAttention(int64_t embed, int64_t heads, Options opt);
  std::vector<ParamSpec> params() const override;
  Tensor apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const override;
  std::string describe() const override;

  struct Masks {
    bool causal = false;
    // bool [B, Sk]: true marks a padding position that no query attends to (PyTorch's
    // key_padding_mask).
    Tensor key_padding{};
  };
  // q [B, Sq, E] attending to k, v [B, Sk, E] -> [B, Sq, E].
  Tensor attend(std::span<const Tensor> p, const Tensor& q, const Tensor& k, const Tensor& v, const Masks& masks,
                Context& ctx) const;

 private:
  int64_t embed_, heads_;
  Options opt_;
};

// x + attention(norm1(x)), then + linear2(activation(linear1(norm2(.)))), with dropout after the
// attention, inside the feed-forward and after it. Parameter names as PyTorch's: self_attn.*,
// linear1.*, linear2.*, norm1.*, norm2.*.
class TransformerBlock : public Layer {
 public:
  struct Options {
    int64_t feedforward = 2048;
    double dropout = 0.1;
    bool gelu = false;  // the feed-forward's activation: GELU, or ReLU (PyTorch's default)
    bool causal = false;
    double eps = 1e-5;
  };
  TransformerBlock(int64_t embed, int64_t heads, Options opt);
  std::vector<ParamSpec> params() const override;
  Tensor apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const override;
  std::string describe() const override;

 private:
  int64_t embed_;
  Options opt_;
  MultiHeadAttention attention_;
  Dense linear1_, linear2_;
  LayerNorm norm1_, norm2_;
};

// PyTorch's TransformerDecoderLayer with norm_first=True and batch_first=True: x + self-attention
// (causal) of norm1(x), then + cross-attention of norm2(.) to `memory`, then + the feed-forward
// of norm3(.), with dropout after each. Parameter names as PyTorch's: self_attn.*,
// multihead_attn.*, linear1.*, linear2.*, norm1.*, norm2.*, norm3.*. As a layer (one input) it
// attends to x itself as memory; decode() takes the encoder's output.
class TransformerDecoderBlock : public Layer {
 public:
  TransformerDecoderBlock(int64_t embed, int64_t heads, TransformerBlock::Options opt);
  std::vector<ParamSpec> params() const override;
  Tensor apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const override;
  std::string describe() const override;
  // x [B, S, E] (the target sequence) attending to memory [B, M, E]; `memory_padding` (bool
  // [B, M], true = padding) as MultiHeadAttention's key_padding.
  Tensor decode(std::span<const Tensor> p, const Tensor& x, const Tensor& memory, Context& ctx,
                const Tensor& memory_padding = {}) const;

 private:
  int64_t embed_;
  TransformerBlock::Options opt_;
  MultiHeadAttention self_attention_, cross_attention_;
  Dense linear1_, linear2_;
  LayerNorm norm1_, norm2_, norm3_;
};

}  // namespace fluxion::nn
