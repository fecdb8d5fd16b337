#include "fluxion/nn/attention.h"

#include "fluxion/error.h"
#include "fluxion/nn/functional.h"

namespace fluxion::nn {

namespace {

// `layer`'s parameter specs with `prefix` + "." before each name.
std::vector<ParamSpec> prefixed(const std::string& prefix, const Layer& layer) {
  std::vector<ParamSpec> out = layer.params();
  for (ParamSpec& s : out) s.name = prefix + "." + s.name;
  return out;
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
  std::vector<ParamSpec> out;
  for (auto [name, layer] : std::initializer_list<std::pair<const char*, const Layer*>>{{"self_attn", &attention_},
                                                                                        {"linear1", &linear1_},
                                                                                        {"linear2", &linear2_},
                                                                                        {"norm1", &norm1_},
                                                                                        {"norm2", &norm2_}}) {
    for (ParamSpec& s : prefixed(name, *layer)) out.push_back(std::move(s));
  }
  return out;
}

Tensor TransformerBlock::apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const {
  expect_input(describe(), x, 3, 2, embed_);
  // params() order: self_attn (4), linear1 (2), linear2 (2), norm1 (2), norm2 (2).
  std::span<const Tensor> attn = p.subspan(0, 4), l1 = p.subspan(4, 2), l2 = p.subspan(6, 2), n1 = p.subspan(8, 2),
                          n2 = p.subspan(10, 2);
  auto drop = [&](const Tensor& t, int32_t index) {
    if (!ctx.training || opt_.dropout == 0) return t;
    return dropout(t, opt_.dropout, random::fold_in(ctx.require_key(describe()), index));
  };
  Context attention_ctx = child(ctx, 0);
  Tensor h = x + drop(attention_.apply(attn, norm1_.forward(n1, x), attention_ctx), 1);
  Tensor inner = linear1_.forward(l1, norm2_.forward(n2, h));
  inner = drop(opt_.gelu ? gelu(inner) : relu(inner), 2);
  return h + drop(linear2_.forward(l2, inner), 3);
}

std::string TransformerBlock::describe() const {
  return "TransformerBlock(" + std::to_string(embed_) + ", ff " + std::to_string(opt_.feedforward) +
         (opt_.causal ? ", causal" : "") + ")";
}

}  // namespace fluxion::nn
