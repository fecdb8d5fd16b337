// The layers' computations as functions of Tensors (as torch.nn.functional): activations,
// normalisation, dropout and attention, for use inside a trace.
#pragma once

#include <cstdint>

#include "fluxion/ops.h"

namespace fluxion::nn {

// x * Phi(x) with the exact normal CDF (PyTorch's default), or its tanh approximation.
Tensor gelu(const Tensor& x, bool tanh_approximation = false, Loc loc = Loc::current());
// x * sigmoid(x) (swish).
Tensor silu(const Tensor& x, Loc loc = Loc::current());

// (x - mean) / sqrt(var + eps) over the last `axes` axes (biased variance), without an affine map.
Tensor layer_norm(const Tensor& x, int64_t axes = 1, double eps = 1e-5, Loc loc = Loc::current());

// Inverted dropout: each element is zeroed with probability p and the others scaled by 1 / (1 - p),
// drawn from `key` (random::key). p = 0 is the identity; p = 1 gives zeros.
Tensor dropout(const Tensor& x, double p, const Tensor& key, Loc loc = Loc::current());

// softmax(q k^T / sqrt(d) + bias) v over the last two axes: q [..., Sq, d], k [..., Sk, d],
// v [..., Sk, dv] -> [..., Sq, dv]. `allowed`, when given, is a bool Tensor broadcastable to
// [..., Sq, Sk]: false entries get no weight (a row with none allowed gives zeros, not NaN).
// `causal` allows key j for query i only when j <= i + (Sk - Sq).
struct AttentionOptions {
  bool causal = false;
  Tensor allowed{};
  double dropout = 0;  // on the attention weights, with `key`
  Tensor key{};
};
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options = {}, Loc loc = Loc::current());

}  // namespace fluxion::nn
