#include "common/gpt.h"

namespace samples {

namespace fx = fluxion;
namespace nn = fluxion::nn;
using fx::Tensor;

namespace {

// tok_emb[token] + pos_emb[position], then dropout; both tables N(0, 0.02) as GPT-2.
class TokenAndPosition : public nn::Layer {
 public:
  TokenAndPosition(int64_t vocab, int64_t context, int64_t embed, double dropout)
      : vocab_(vocab), context_(context), embed_(embed), dropout_(dropout) {}
  std::vector<nn::ParamSpec> params() const override {
    return {{"tok_emb.weight", {vocab_, embed_}, nn::Initializer::normal(0, 0.02)},
            {"pos_emb.weight", {context_, embed_}, nn::Initializer::normal(0, 0.02)}};
  }
  Tensor apply(std::span<const Tensor> p, const Tensor& x, nn::Context& ctx) const override {
    if (!x.valid() || x.dtype() != fx::i32 || x.rank() != 2 || x.dim(1) > context_)
      fx::detail::fail(describe(), "input " + (x.valid() ? x.type().str() : std::string("(empty)")) +
                                       ": expected i32 tokens [B, S] with S <= " + std::to_string(context_));
    Tensor h = fx::take(p[0], x, 0) + fx::slice_axis(p[1], 0, 0, x.dim(1));
    if (!ctx.training || dropout_ == 0) return h;
    return nn::dropout(h, dropout_, ctx.require_key(describe()));
  }
  std::string describe() const override {
    return "TokenAndPosition(" + std::to_string(vocab_) + " tokens, " + std::to_string(context_) + " positions, " +
           std::to_string(embed_) + ")";
  }

 private:
  int64_t vocab_, context_, embed_;
  double dropout_;
};

}  // namespace

nn::Model gpt_model(const GptOptions& o) {
  std::vector<nn::Model> layers{TokenAndPosition(o.vocab, o.context, o.embed, o.dropout)};
  for (int64_t i = 0; i < o.layers; ++i) {
    layers.push_back(nn::TransformerBlock(
        o.embed, o.heads, {.feedforward = 4 * o.embed, .dropout = o.dropout, .gelu = true, .causal = true}));
  }
  layers.push_back(nn::LayerNorm({o.embed}));
  layers.push_back(nn::Dense(o.embed, o.vocab));
  return nn::Model(nn::Sequential(std::move(layers)));
}

nn::Optimizer gpt_optimizer(double lr, double weight_decay, double clip, const nn::Schedule& schedule) {
  std::vector<nn::GradientTransformation> links;
  if (clip > 0) links.push_back(nn::clip_by_global_norm(clip));
  links.push_back(nn::scale_by_adam(0.9, 0.95));
  links.push_back(nn::add_decayed_weights(weight_decay, nn::matrices_only()));
  links.push_back(nn::scale_by_learning_rate(lr, schedule));
  return nn::Optimizer("adamw", nn::chain(links));
}

}  // namespace samples
