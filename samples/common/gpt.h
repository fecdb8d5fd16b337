// A small GPT: token and position embeddings, pre-norm causal Transformer blocks, a final layer
// norm and a dense layer to the vocabulary; shared by gpt_train and its benchmark.
#pragma once

#include <fluxion/nn.h>

#include <cstdint>

namespace samples {

struct GptOptions {
  int64_t vocab = 0;
  int64_t context = 128;  // the longest sequence (the position table's length)
  int64_t embed = 128;
  int64_t heads = 4;
  int64_t layers = 4;
  double dropout = 0.1;
};

// tokens i32 [B, S] (S <= context) -> logits [B, S, vocab]. Parameter names as nanoGPT's
// PyTorch module would give them under nn.Sequential: "0.tok_emb.weight", "1.self_attn...".
fluxion::nn::Model gpt_model(const GptOptions& o);

// nanoGPT's optimizer: gradients clipped to a global norm (when clip > 0), then AdamW with
// betas (0.9, 0.95) decaying matrices only, and the learning rate under `schedule`.
fluxion::nn::Optimizer gpt_optimizer(double lr, double weight_decay, double clip,
                                     const fluxion::nn::Schedule& schedule);

}  // namespace samples
