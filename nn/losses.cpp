#include "fluxion/nn/losses.h"

#include "fluxion/error.h"

namespace fluxion::nn {

namespace {

void expect_float(const char* op, const Tensor& x, const Loc& loc) {
  if (!x.valid() || !is_float(x.dtype()))
    fluxion::detail::fail(op, "operand " + (x.valid() ? x.type().str() : std::string("(empty)")) + ": expected a float tensor", &loc);
}

void expect_same_shape(const char* op, const Tensor& a, const Tensor& b, const Loc& loc) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype())
    fluxion::detail::fail(op, a.type().str() + " and " + b.type().str() + ": expected equal shapes and dtypes", &loc);
}

// logits [..., C] and labels [...] (i32, the logits' shape without the class axis).
void expect_labels(const char* op, const Tensor& logits, const Tensor& labels, const Loc& loc) {
  expect_float(op, logits, loc);
  Shape want(logits.shape().begin(), logits.shape().end() - (logits.rank() > 0 ? 1 : 0));
  if (logits.rank() < 1 || !labels.valid() || labels.dtype() != i32 || labels.shape() != want) {
    fluxion::detail::fail(op, "logits " + logits.type().str() + ", labels " + (labels.valid() ? labels.type().str() : "(empty)") +
                         ": expected logits [..., classes] and i32 labels " + shape_str(want), &loc);
  }
}

}  // namespace

Tensor logsumexp(const Tensor& x, int64_t axis, bool keepdims, Loc loc) {
  expect_float("nn::logsumexp", x, loc);
  // The shift is a constant of differentiation: the gradient of the result is softmax(x)
  // either way, and stopping it avoids differentiating max.
  Tensor m = stop_gradient(max(x, axis, true, loc), loc);
  Tensor out = log(sum(exp(x - m, loc), axis, true, loc), loc) + m;
  return keepdims ? out : squeeze(out, axis, loc);
}

Tensor log_softmax(const Tensor& x, int64_t axis, Loc loc) { return x - logsumexp(x, axis, true, loc); }

Tensor softmax(const Tensor& x, int64_t axis, Loc loc) { return exp(log_softmax(x, axis, loc), loc); }

Tensor mse(const Tensor& prediction, const Tensor& target, Loc loc) {
  expect_float("nn::mse", prediction, loc);
  expect_same_shape("nn::mse", prediction, target, loc);
  return mean(square(prediction - target, loc), {}, false, loc);
}

Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels, Loc loc) {
  expect_labels("nn::softmax_cross_entropy", logits, labels, loc);
  Tensor picked = gather(logits, labels, -1, loc);
  return mean(logsumexp(logits, -1, false, loc) - picked, {}, false, loc);
}

Tensor softmax_cross_entropy_probs(const Tensor& logits, const Tensor& target_probs, Loc loc) {
  expect_float("nn::softmax_cross_entropy_probs", logits, loc);
  expect_same_shape("nn::softmax_cross_entropy_probs", logits, target_probs, loc);
  return mean(neg(sum(target_probs * log_softmax(logits, -1, loc), -1, false, loc), loc), {}, false, loc);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets, Loc loc) {
  expect_float("nn::binary_cross_entropy_with_logits", logits, loc);
  expect_same_shape("nn::binary_cross_entropy_with_logits", logits, targets, loc);
  // max(x, 0) - x t + log(1 + exp(-|x|)): no exp of a positive number.
  Tensor l = relu(logits, loc) - logits * targets + log1p(exp(neg(abs(logits, loc), loc), loc), loc);
  return mean(l, {}, false, loc);
}

Tensor binary_cross_entropy(const Tensor& probs, const Tensor& targets, Loc loc) {
  expect_float("nn::binary_cross_entropy", probs, loc);
  expect_same_shape("nn::binary_cross_entropy", probs, targets, loc);
  Tensor p = minimum(maximum(probs, 1e-7, loc), 1 - 1e-7, loc);
  Tensor l = neg(targets * log(p, loc) + (1.0 - targets) * log(1.0 - p, loc), loc);
  return mean(l, {}, false, loc);
}

Tensor correct_count(const Tensor& logits, const Tensor& labels, Loc loc) {
  expect_labels("nn::correct_count", logits, labels, loc);
  return sum(cast(eq(argmax(logits, -1, false, loc), labels, loc), i32, loc), {}, false, loc);
}

Tensor accuracy(const Tensor& logits, const Tensor& labels, Loc loc) {
  Tensor n = correct_count(logits, labels, loc);
  return cast(n, f32, loc) / static_cast<double>(labels.numel() > 0 ? labels.numel() : 1);
}

}  // namespace fluxion::nn
