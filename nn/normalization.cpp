#include "fluxion/nn/normalization.h"

#include <cstdio>

#include "fluxion/error.h"
#include "fluxion/nn/functional.h"
#include "nn/number_text.h"

namespace fluxion::nn {

namespace {

// weight (ones) and bias (zeros) shaped `shape`, when affine.
std::vector<ParamSpec> affine_params(bool affine, const Shape& shape) {
  if (!affine) return {};
  return {{"weight", shape, Initializer::ones()}, {"bias", shape, Initializer::zeros()}};
}

}  // namespace

LayerNorm::LayerNorm(std::vector<int64_t> shape, Options opt) : shape_(std::move(shape)), opt_(opt) {
  bool ok = !shape_.empty();
  for (int64_t d : shape_) ok = ok && d > 0;
  if (!ok)
    fluxion::detail::fail("nn::LayerNorm", "normalized shape " + shape_str(shape_) + ": expected positive sizes");
}

std::vector<ParamSpec> LayerNorm::params() const { return affine_params(opt_.affine, shape_); }

Tensor LayerNorm::forward(std::span<const Tensor> p, const Tensor& x) const {
  int64_t n = static_cast<int64_t>(shape_.size());
  bool fits =
      x.valid() && is_float(x.dtype()) && x.rank() >= n && Shape(x.shape().end() - n, x.shape().end()) == Shape(shape_);
  if (!fits) {
    fluxion::detail::fail(describe(), "input " + (x.valid() ? x.type().str() : std::string("(empty)")) +
                                          ": expected a float input ending in " + shape_str(shape_));
  }
  Tensor y = layer_norm(x, n, opt_.eps);
  return opt_.affine ? y * p[0] + p[1] : y;
}

std::string LayerNorm::describe() const {
  return "LayerNorm(" + shape_str(shape_) + (opt_.eps == 1e-5 ? "" : ", eps " + detail::number_text(opt_.eps)) + ")";
}

BatchNorm::BatchNorm(int64_t features, int spatial_dims, Options opt)
    : features_(features), spatial_(spatial_dims), opt_(opt) {
  if (features < 1 || (spatial_dims != 1 && spatial_dims != 2))
    fluxion::detail::fail("nn::BatchNorm", std::to_string(features) + " features: expected at least one");
}

std::vector<ParamSpec> BatchNorm::params() const { return affine_params(opt_.affine, {features_}); }

std::vector<ParamSpec> BatchNorm::state() const {
  return {{"running_mean", {features_}, Initializer::zeros()}, {"running_var", {features_}, Initializer::ones()}};
}

Tensor BatchNorm::apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const {
  if (spatial_ == 2) expect_input(describe(), x, 4, 1, features_);
  else if (x.valid() && x.rank() == 3) expect_input(describe(), x, 3, 1, features_);
  else expect_input(describe(), x, 2, 1, features_);
  // Statistics over every axis but the channels'; parameters broadcast as [1, C, 1, ...].
  std::vector<int64_t> over{0}, channel_shape{1, features_};
  for (int64_t a = 2; a < x.rank(); ++a) {
    over.push_back(a);
    channel_shape.push_back(1);
  }
  // 16-bit inputs are normalized in f32, as torch.autocast runs batch norm (layer_norm says why),
  // and their statistics kept as the state's dtype has them.
  Tensor xw = is_half(x.dtype()) ? cast(x, DType::f32) : x;
  auto as_input = [&](const Tensor& s) { return is_half(s.dtype()) ? cast(s, xw.dtype()) : s; };
  Tensor mean_, var_;
  if (ctx.training) {
    mean_ = mean(xw, over, true);
    var_ = mean(square(xw - mean_), over, true);
    double n = static_cast<double>(x.numel()) / static_cast<double>(features_);
    Tensor batch_mean = reshape(mean_, {features_}), unbiased = reshape(var_, {features_}) * (n / std::max(n - 1, 1.0));
    ctx.new_state.clear();
    for (size_t i = 0; i < 2; ++i) {
      Tensor next = as_input(ctx.state[i]) * (1 - opt_.momentum) + (i == 0 ? batch_mean : unbiased) * opt_.momentum;
      ctx.new_state.push_back(cast(next, ctx.state[i].dtype()));
    }
  } else {
    mean_ = reshape(as_input(ctx.state[0]), channel_shape);
    var_ = reshape(as_input(ctx.state[1]), channel_shape);
  }
  Tensor y = cast((xw - mean_) * rsqrt(var_ + opt_.eps), x.dtype());
  return opt_.affine ? y * reshape(p[0], channel_shape) + reshape(p[1], channel_shape) : y;
}

std::string BatchNorm::describe() const {
  return "BatchNorm" + std::to_string(spatial_) + "d(" + std::to_string(features_) + ")";
}

Dropout::Dropout(double p) : p_(p) {
  if (p < 0 || p > 1) fluxion::detail::fail("nn::Dropout", "p = " + detail::number_text(p) + ": expected 0 <= p <= 1");
}

Tensor Dropout::apply(std::span<const Tensor>, const Tensor& x, Context& ctx) const {
  if (!ctx.training || p_ == 0) return x;
  return dropout(x, p_, ctx.require_key(describe()));
}

std::string Dropout::describe() const { return "Dropout(" + detail::number_text(p_) + ")"; }

}  // namespace fluxion::nn
