#include "fluxion/nn/functional.h"

#include <cmath>
#include <numbers>

#include "fluxion/error.h"
#include "fluxion/nn/losses.h"

namespace fluxion::nn {

Tensor gelu(const Tensor& x, bool tanh_approximation, Loc loc) {
  if (tanh_approximation) {
    const double c = std::sqrt(2 / std::numbers::pi);
    return x * 0.5 * (1.0 + tanh((x + x * x * x * 0.044715) * c, loc));
  }
  return x * 0.5 * (1.0 + erf(x * std::numbers::sqrt2 / 2, loc));
}

Tensor silu(const Tensor& x, Loc loc) { return x * sigmoid(x, loc); }

Tensor layer_norm(const Tensor& x, int64_t axes, double eps, Loc loc) {
  if (axes < 1 || axes > x.rank())
    fluxion::detail::fail("nn::layer_norm",
                          "normalising the last " + std::to_string(axes) + " axes of " + x.type().str(), &loc);
  // 16-bit inputs are normalized in f32, as torch.autocast runs normalization: the gradient of
  // rsqrt(var) is var^-1.5 / 2, past f16's range for a variance below about 4e-4.
  if (is_half(x.dtype())) return cast(layer_norm(cast(x, DType::f32, loc), axes, eps, loc), x.dtype(), loc);
  std::vector<int64_t> over;
  for (int64_t a = x.rank() - axes; a < x.rank(); ++a) over.push_back(a);
  Tensor centered = x - mean(x, over, true, loc);
  Tensor var = mean(square(centered), over, true, loc);
  return centered * rsqrt(var + eps, loc);
}

Tensor dropout(const Tensor& x, double p, const Tensor& key, Loc loc) {
  if (p < 0 || p > 1) fluxion::detail::fail("nn::dropout", "p = " + std::to_string(p) + ": expected 0 <= p <= 1", &loc);
  if (p == 0) return x;
  if (p == 1) return zeros_like(x, loc);
  Tensor keep = ge(random::uniform(key, x.shape(), x.dtype(), 0, 1, loc), scalar(p, x.dtype()), loc);
  return where(keep, x * (1 / (1 - p)), 0.0, loc);
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& o,
                                    Loc loc) {
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank() || q.dim(-1) != k.dim(-1) ||
      k.dim(-2) != v.dim(-2)) {
    fluxion::detail::fail("nn::scaled_dot_product_attention",
                          "q " + q.type().str() + ", k " + k.type().str() + ", v " + v.type().str() +
                              ": expected [..., Sq, d], [..., Sk, d] and [..., Sk, dv]",
                          &loc);
  }
  int64_t sq = q.dim(-2), sk = k.dim(-2);
  std::vector<int64_t> perm;
  for (int64_t a = 0; a < k.rank(); ++a) perm.push_back(a);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  Tensor scores = matmul(q, permute(k, perm, loc), loc) * (1 / std::sqrt(static_cast<double>(q.dim(-1))));
  // The softmax of 16-bit scores runs in f32, as torch.autocast runs it (the masked scores'
  // -1e30 is not an f16 number, and f16's exp overflows past 11).
  DType dtype = scores.dtype();
  if (is_half(dtype)) scores = cast(scores, DType::f32, loc);
  Tensor allowed = o.allowed;
  if (o.causal) {
    Tensor i = reshape(arange(sq), {sq, 1}), j = reshape(arange(sk), {1, sk});
    Tensor causal = le(j, i + static_cast<double>(sk - sq));
    allowed = allowed.valid() ? logical_and(allowed, causal) : causal;
  }
  Tensor weights;
  if (allowed.valid()) {
    Tensor mask = broadcast_to(allowed, scores.shape(), loc);
    // Masked scores are a large finite negative, not -inf, so that a row with no allowed key
    // stays finite; its weights are zeroed after the softmax.
    weights = where(mask, softmax(where(mask, scores, -1e30), -1, loc), 0.0);
  } else {
    weights = softmax(scores, -1, loc);
  }
  weights = cast(weights, dtype, loc);
  if (o.dropout > 0) weights = dropout(weights, o.dropout, o.key, loc);
  return matmul(weights, v, loc);
}

}  // namespace fluxion::nn
