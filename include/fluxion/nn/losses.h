// Losses and metrics. Every loss returns the mean over the batch (a float scalar Tensor).
#pragma once

#include <cstdint>

#include "fluxion/ops.h"

namespace fluxion::nn {

// log(softmax(x)) along `axis`, computed stably (the maximum is subtracted first).
Tensor log_softmax(const Tensor& x, int64_t axis = -1, Loc loc = Loc::current());
Tensor softmax(const Tensor& x, int64_t axis = -1, Loc loc = Loc::current());
// log(sum(exp(x))) along `axis`, stably.
Tensor logsumexp(const Tensor& x, int64_t axis = -1, bool keepdims = false, Loc loc = Loc::current());

// Mean squared error between equal-shaped float Tensors.
Tensor mse(const Tensor& prediction, const Tensor& target, Loc loc = Loc::current());
// Softmax cross-entropy from logits [..., C] and i32 class labels [...] (each in [0, C)),
// averaged over the labels; never evaluates exp of a large logit.
Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Loc loc = Loc::current());
// The same with target probabilities [..., C] (one-hot or smoothed) instead of labels.
Tensor softmax_cross_entropy_probs(const Tensor& logits, const Tensor& target_probs, Loc loc = Loc::current());
// Binary cross-entropy from logits and targets in [0, 1], stable for logits of any size.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets, Loc loc = Loc::current());
// Binary cross-entropy from probabilities (clamped into [1e-7, 1 - 1e-7] before the log).
Tensor binary_cross_entropy(const Tensor& probs, const Tensor& targets, Loc loc = Loc::current());

// The fraction of rows whose argmax over the last axis equals the label (f32 scalar).
Tensor accuracy(const Tensor& logits, const Tensor& labels, Loc loc = Loc::current());
// The number of such rows (i32 scalar): sums exactly over many batches.
Tensor correct_count(const Tensor& logits, const Tensor& labels, Loc loc = Loc::current());

}  // namespace fluxion::nn
