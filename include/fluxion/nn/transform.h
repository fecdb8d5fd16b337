// Gradient transformations, after Optax: an optimizer is a chain of small transformations of the
// gradients (clip, scale by Adam's moments, add weight decay, scale by the learning rate), each
// with its own state and run-time hyperparameters. A transformation's update is traced into the
// training step, so a whole chain is one compiled program. nn::Optimizer wraps one and adds the
// result to the parameters; the named optimizers (optim.h) are chains of the ones here.
//
// Hyperparameters are run-time scalars: they live at the front of the optimizer's state (as
// Arrays of the parameters' float dtype), so changing one (Optimizer::set_hyperparameter) never
// re-traces or recompiles, and checkpoints keep them.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/nn/schedule.h"
#include "fluxion/tensor.h"

namespace fluxion::nn {

struct Hyperparameter {
  std::string name;  // unique within a chain: "lr", "beta1", "weight_decay", "max_norm"
  double value = 0;  // the value a fresh state starts with
};

// What a transformation's update sees, inside a trace.
struct TransformInputs {
  const std::vector<Tensor>& updates;     // the gradients as transformed by the chain so far
  const std::vector<Tensor>& params;      // the parameters before the step
  const std::vector<std::string>& names;  // the parameters' names ("0.weight")
  std::span<const Tensor> hyper;          // this transformation's hyperparameters, in declared
                                          // order: scalars of the state's float dtype
  std::span<const Tensor> state;          // this transformation's state, in init's order
};

struct TransformResult {
  std::vector<Tensor> updates;  // one per parameter, each with its parameter's type
  std::vector<Tensor> state;    // the new state, typed like the old
};

// Which parameters a transformation applies to, from their names and shapes.
using ParamMask = std::function<bool(const std::string& name, const Shape& shape)>;
// Matrices and kernels only (rank >= 2): the usual weight-decay mask, which leaves biases and
// normalisation scales undecayed.
ParamMask matrices_only();

struct GradientTransformation {
  std::string name;  // "scale_by_adam"
  std::vector<Hyperparameter> hyperparameters;
  // Fresh state for these parameters (on the host); none when empty.
  std::function<std::vector<Array>(const std::vector<Array>& params)> init;
  // The state's names given the parameters' (one per init entry): "adam.m.0.weight".
  std::function<std::vector<std::string>(const std::vector<std::string>& param_names)> state_names;
  std::function<TransformResult(const TransformInputs&)> update;
  // Trace-time settings shown by describe() after the hyperparameters ("schedule=..."); a
  // chain's are its links' descriptions, shown instead of its hyperparameters.
  std::string settings;

  // "scale_by_adam(beta1=0.9, beta2=0.999, eps=1e-08)".
  std::string describe() const;
};

// The transformations applied in order, as one. Raises Error when two of them declare a
// hyperparameter of the same name.
GradientTransformation chain(std::vector<GradientTransformation> links);

// u -> -lr * schedule(step) * u: the last link of every optimizer. Hyperparameters "lr" and the
// schedule's numbers ("lr.warmup", "lr.total", ...: Schedule::parameters()); a schedule other
// than the constant keeps its step count in the state ("lr.step", i32).
GradientTransformation scale_by_learning_rate(double lr, Schedule schedule = {});
// PyTorch's momentum: v = momentum * v + u; u -> nesterov ? u + momentum * v : v.
GradientTransformation trace(double momentum, bool nesterov = false);
// u -> u + weight_decay * p for the parameters in `mask` (all when empty).
GradientTransformation add_decayed_weights(double weight_decay, ParamMask mask = {});
// Adam's bias-corrected moments: u -> m_hat / (sqrt(v_hat) + eps).
GradientTransformation scale_by_adam(double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8);
// RMSProp: v = alpha * v + (1 - alpha) u^2; u -> u / (sqrt(v) + eps).
GradientTransformation scale_by_rms(double alpha = 0.99, double eps = 1e-8);
// Adagrad: s += u^2 (s starts at `initial`); u -> u / (sqrt(s) + eps).
GradientTransformation scale_by_rss(double eps = 1e-10, double initial = 0);
// Lion: u -> sign(beta1 * m + (1 - beta1) u); m = beta2 * m + (1 - beta2) u.
GradientTransformation scale_by_lion(double beta1 = 0.9, double beta2 = 0.99);
// u -> u * min(1, max_norm / (||u|| + 1e-6)), ||u|| the norm of all updates together (PyTorch's
// clip_grad_norm_).
GradientTransformation clip_by_global_norm(double max_norm);
// Every element of u clamped into [-limit, limit] (PyTorch's clip_grad_value_).
GradientTransformation clip_by_value(double limit);

}  // namespace fluxion::nn
