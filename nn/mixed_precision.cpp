#include "nn/mixed_precision.h"

#include <limits>
#include <string>

#include "fluxion/error.h"
#include "fluxion/ops.h"

namespace fluxion::nn {

MixedPrecision MixedPrecision::named(const std::string& name) {
  MixedPrecision p;
  if (name == "f32") return p;
  if (name == "bf16") {
    p.compute = DType::bf16;
    return p;
  }
  if (name == "f16") {
    p.compute = DType::f16;
    p.loss_scaling = true;
    return p;
  }
  fluxion::detail::fail("nn::MixedPrecision::named", "unknown precision '" + name + "'; expected f32, bf16 or f16");
}

namespace detail {

Autocast::Autocast(const MixedPrecision& policy, DType param_dtype)
    : on_(is_half(policy.compute)), compute_(policy.compute), param_dtype_(param_dtype) {
  if (!is_float(compute_)) {
    fluxion::detail::fail("nn::Trainer", "MixedPrecision::compute is " + std::string(dtype_name(compute_)) +
                                             "; expected bf16 or f16 (f32 or f64: no policy)");
  }
  if (policy.f16_sums && compute_ != DType::f16) {
    fluxion::detail::fail("nn::Trainer", "MixedPrecision::f16_sums is set with compute " +
                                             std::string(dtype_name(compute_)) + "; it applies to compute f16");
  }
  if (policy.f16_sums) f16_sums_.emplace();
}

Tensor Autocast::down(const Tensor& x) const {
  return on_ && is_float(x.dtype()) && x.dtype() != compute_ ? cast(x, compute_) : x;
}

Tensors Autocast::down(const Tensors& xs) const {
  Tensors out;
  for (const Tensor& x : xs) out.push_back(down(x));
  return out;
}

Tensor Autocast::up(const Tensor& x, DType dtype) const { return x.dtype() == dtype ? x : cast(x, dtype); }

Tensor all_finite(const Tensors& grads) {
  Tensor ok;
  bool first = true;
  for (const Tensor& g : grads) {
    // max propagates NaN, and NaN < inf is false.
    Tensor finite = max(abs(g)) < std::numeric_limits<double>::infinity();
    ok = first ? finite : logical_and(ok, finite);
    first = false;
  }
  return ok;
}

Tensors unless_skipped(const Tensor& ok, const Tensors& updated, const Tensors& kept) {
  Tensors out;
  for (size_t i = 0; i < updated.size(); ++i) out.push_back(where(ok, updated[i], kept[i]));
  return out;
}

Tensors next_loss_scale(const MixedPrecision& policy, const Tensors& scale, const Tensor& ok) {
  Tensor good = scale[1] + 1.0;
  Tensor grow = good >= static_cast<double>(policy.growth_interval);
  Tensor grown = where(grow, scale[0] * policy.growth_factor, scale[0]);
  return {where(ok, grown, scale[0] * policy.backoff_factor), where(logical_and(ok, logical_not(grow)), good, 0.0),
          where(ok, scale[2], scale[2] + 1.0)};
}

}  // namespace detail
}  // namespace fluxion::nn
