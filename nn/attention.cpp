#include "fluxion/nn/attention.h"

#include "fluxion/error.h"
#include "fluxion/nn/functional.h"

namespace fluxion::nn {

namespace {

// The sub-layers' parameter specs in order, each name prefixed with its sub-layer's ("linear1.weight").
std::vector<ParamSpec> children_params(std::initializer_list<std::pair<const char*, const Layer*>> children) {
  std::vector<ParamSpec> out;
  for (auto [prefix, layer] : children) {
    for (ParamSpec s : layer->params()) {
      s.name = std::string(prefix) + "." + s.name;
      out.push_back(std::move(s));
    }
  }
  return out;
}

// A block's dropout after its sub-layer `index`, drawn from fold_in(key, index) in training.
struct BlockDropout {
  const Context& ctx;
  double p;
  std::string layer;
  Tensor operator()(const Tensor& t, int32_t index) const {
    if (!ctx.training || p == 0) return t;
    return dropout(t, p, random::fold_in(ctx.require_key(layer), index));
  }
};

// x + the feed-forward linear2(dropout(activation(linear1(x)))), with dropout after it.
Tensor feed_forward(const Tensor& x, const Tensor& normed, const Dense& linear1, std::span<const Tensor> p1,
                    const Dense& linear2, std::span<const Tensor> p2, bool gelu_activation, const BlockDropout& drop) {
  Tensor inner = linear1.forward(p1, normed);
  inner = drop(gelu_activation ? gelu(inner) : relu(inner), 2);
  return x + drop(linear2.forward(p2, inner), 3);
}

// A sub-layer's key: fold_in(key, index) when there is a key.
Context child(const Context& ctx, int32_t index) {
  return {ctx.training, ctx.key.valid() ? random::fold_in(ctx.key, index) : Tensor(), {}, {}};
}

// x [B, S, E] -> [B, heads, S, E / heads].
Tensor split_heads(const Tensor& x, int64_t heads) {
  return permute(reshape(x, {x.dim(0), x.dim(1), heads, x.dim(2) / heads}), {0, 2, 1, 3});
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(int64_t embed, int64_t heads, Options opt)
    : embed_(embed), heads_(heads), opt_(opt) {
  if (embed < 1 || heads < 1 || embed % heads != 0 || opt.dropout < 0 || opt.dropout > 1) {
    fluxion::detail::fail("nn::MultiHeadAttention", "embedding " + std::to_string(embed) + " in " +
                                                        std::to_string(heads) +
                                                        " heads: expected a positive width divisible by the heads");
  }
}

std::vector<ParamSpec> MultiHeadAttention::params() const {
  std::vector<ParamSpec> p{{"in_proj_weight", {3 * embed_, embed_}, Initializer::glorot_uniform()}};
  if (opt_.bias) p.push_back({"in_proj_bias", {3 * embed_}, Initializer::zeros()});
  p.push_back({"out_proj.weight", {embed_, embed_}, Initializer::fan_in_uniform()});
  if (opt_.bias) p.push_back({"out_proj.bias", {embed_}, Initializer::zeros()});
  return p;
}

Tensor MultiHeadAttention::apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const {
  return attend(p, x, x, x, {.causal = opt_.causal}, ctx);
}

Tensor MultiHeadAttention::attend(std::span<const Tensor> p, const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Masks& masks, Context& ctx) const {
  for (const Tensor* t : {&q, &k, &v}) expect_input(describe(), *t, 3, 2, embed_);
  if (k.dim(1) != v.dim(1) || q.dim(0) != k.dim(0) || k.dim(0) != v.dim(0)) {
    fluxion::detail::fail(describe(), "q " + q.type().str() + ", k " + k.type().str() + ", v " + v.type().str() +
                                          ": expected one batch size, and keys and values of one length");
  }
  const Tensor& w = p[0];
  auto project = [&](const Tensor& x, int64_t part) {
    Tensor y = matmul(x, transpose(slice_axis(w, 0, part * embed_, (part + 1) * embed_)));
    return opt_.bias ? y + slice_axis(p[1], 0, part * embed_, (part + 1) * embed_) : y;
  };
  AttentionOptions a{.causal = masks.causal};
  if (masks.key_padding.valid()) {
    const Tensor& pad = masks.key_padding;
    if (pad.dtype() != DType::boolean || pad.shape() != Shape{k.dim(0), k.dim(1)}) {
      fluxion::detail::fail(describe(), "key padding mask " + pad.type().str() + ": expected bool[" +
                                            std::to_string(k.dim(0)) + "," + std::to_string(k.dim(1)) + "]");
    }
    a.allowed = reshape(logical_not(pad), {k.dim(0), 1, 1, k.dim(1)});
  }
  if (ctx.training && opt_.dropout > 0) {
    a.dropout = opt_.dropout;
    a.key = ctx.require_key(describe());
  }
  Tensor o = scaled_dot_product_attention(split_heads(project(q, 0), heads_), split_heads(project(k, 1), heads_),
                                          split_heads(project(v, 2), heads_), a);
  Tensor merged = reshape(permute(o, {0, 2, 1, 3}), {q.dim(0), q.dim(1), embed_});
  size_t out = opt_.bias ? 2 : 1;
  Tensor y = matmul(merged, transpose(p[out]));
  return opt_.bias ? y + p[out + 1] : y;
}

std::string MultiHeadAttention::describe() const {
  return "MultiHeadAttention(" + std::to_string(embed_) + ", " + std::to_string(heads_) + " heads" +
         (opt_.causal ? ", causal" : "") + ")";
}

TransformerBlock::TransformerBlock(int64_t embed, int64_t heads, Options opt)
    : embed_(embed),
      opt_(opt),
      attention_(embed, heads, {.bias = true, .dropout = opt.dropout, .causal = opt.causal}),
      linear1_(embed, opt.feedforward),
      linear2_(opt.feedforward, embed),
      norm1_({embed}, {.eps = opt.eps}),
      norm2_({embed}, {.eps = opt.eps}) {}

std::vector<ParamSpec> TransformerBlock::params() const {
  return children_params({{"self_attn", &attention_},
                          {"linear1", &linear1_},
                          {"linear2", &linear2_},
                          {"norm1", &norm1_},
                          {"norm2", &norm2_}});
}

Tensor TransformerBlock::apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const {
  expect_input(describe(), x, 3, 2, embed_);
  // params() order: self_attn (4), linear1 (2), linear2 (2), norm1 (2), norm2 (2).
  std::span<const Tensor> attn = p.subspan(0, 4), l1 = p.subspan(4, 2), l2 = p.subspan(6, 2), n1 = p.subspan(8, 2),
                          n2 = p.subspan(10, 2);
  BlockDropout drop{ctx, opt_.dropout, describe()};
  Context attention_ctx = child(ctx, 0);
  Tensor h = x + drop(attention_.apply(attn, norm1_.forward(n1, x), attention_ctx), 1);
  return feed_forward(h, norm2_.forward(n2, h), linear1_, l1, linear2_, l2, opt_.gelu, drop);
}

std::string TransformerBlock::describe() const {
  return "TransformerBlock(" + std::to_string(embed_) + ", ff " + std::to_string(opt_.feedforward) +
         (opt_.causal ? ", causal" : "") + ")";
}

TransformerDecoderBlock::TransformerDecoderBlock(int64_t embed, int64_t heads, TransformerBlock::Options opt)
    : embed_(embed),
      opt_(opt),
      self_attention_(embed, heads, {.bias = true, .dropout = opt.dropout, .causal = opt.causal}),
      cross_attention_(embed, heads, {.bias = true, .dropout = opt.dropout, .causal = false}),
      linear1_(embed, opt.feedforward),
      linear2_(opt.feedforward, embed),
      norm1_({embed}, {.eps = opt.eps}),
      norm2_({embed}, {.eps = opt.eps}),
      norm3_({embed}, {.eps = opt.eps}) {}

std::vector<ParamSpec> TransformerDecoderBlock::params() const {
  return children_params({{"self_attn", &self_attention_},
                          {"multihead_attn", &cross_attention_},
                          {"linear1", &linear1_},
                          {"linear2", &linear2_},
                          {"norm1", &norm1_},
                          {"norm2", &norm2_},
                          {"norm3", &norm3_}});
}

Tensor TransformerDecoderBlock::apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const {
  return decode(p, x, x, ctx);
}

Tensor TransformerDecoderBlock::decode(std::span<const Tensor> p, const Tensor& x, const Tensor& memory, Context& ctx,
                                       const Tensor& memory_padding) const {
  expect_input(describe(), x, 3, 2, embed_);
  expect_input(describe(), memory, 3, 2, embed_);
  // params() order: self_attn (4), multihead_attn (4), linear1 (2), linear2 (2), norm1..3 (2 each).
  std::span<const Tensor> self = p.subspan(0, 4), cross = p.subspan(4, 4), l1 = p.subspan(8, 2), l2 = p.subspan(10, 2),
                          n1 = p.subspan(12, 2), n2 = p.subspan(14, 2), n3 = p.subspan(16, 2);
  BlockDropout drop{ctx, opt_.dropout, describe()};
  Context self_ctx = child(ctx, 0), cross_ctx = child(ctx, 4);
  Tensor h = x + drop(self_attention_.apply(self, norm1_.forward(n1, x), self_ctx), 1);
  Tensor q = norm2_.forward(n2, h);
  h = h + drop(cross_attention_.attend(cross, q, memory, memory, {.key_padding = memory_padding}, cross_ctx), 5);
  return feed_forward(h, norm3_.forward(n3, h), linear1_, l1, linear2_, l2, opt_.gelu, drop);
}

std::string TransformerDecoderBlock::describe() const {
  return "TransformerDecoderBlock(" + std::to_string(embed_) + ", ff " + std::to_string(opt_.feedforward) +
         (opt_.causal ? ", causal" : "") + ")";
}

}  // namespace fluxion::nn
