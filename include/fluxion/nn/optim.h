// Optimizers. An optimizer is a gradient transformation (transform.h) whose result is added to
// the parameters; its update is traced into the same program as the forward and backward pass,
// so one call of a training step runs forward, backward and the update, and the parameters and
// the optimizer state never leave the backend (on Vulkan they stay in device memory from one
// step to the next). Hyperparameters are run-time inputs held at the front of the state.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/nn/schedule.h"
#include "fluxion/nn/transform.h"

namespace fluxion::nn {

// PyTorch's SGD: g += weight_decay * p; v = momentum * v + g; p -= lr * (nesterov ? g +
// momentum * v : v). Without momentum there is no state, and no "momentum" hyperparameter;
// without weight decay no "weight_decay".
struct SgdOptions {
  double lr = 0.01;
  double momentum = 0;
  bool nesterov = false;
  double weight_decay = 0;
  Schedule schedule{};
  ParamMask decay_mask{};  // the parameters weight decay applies to (all when empty)
};

// Adam (weight_decay adds weight_decay * p to the gradient) and AdamW (weight_decay shrinks the
// parameters directly: p -= lr * weight_decay * p, besides the Adam step), with bias correction.
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  Schedule schedule{};
  ParamMask decay_mask{};
};

// PyTorch's RMSprop (not centered): v = alpha v + (1 - alpha) g^2; b = momentum b + g /
// (sqrt(v) + eps); p -= lr b (b = g / (sqrt(v) + eps) without momentum).
struct RmsPropOptions {
  double lr = 0.01;
  double alpha = 0.99;
  double eps = 1e-8;
  double momentum = 0;
  double weight_decay = 0;
  Schedule schedule{};
  ParamMask decay_mask{};
};

// PyTorch's Adagrad (without lr_decay): s += g^2; p -= lr g / (sqrt(s) + eps).
struct AdagradOptions {
  double lr = 0.01;
  double eps = 1e-10;
  double initial_accumulator = 0;
  double weight_decay = 0;
  Schedule schedule{};
  ParamMask decay_mask{};
};

// Lion (Chen et al. 2023): p -= lr (sign(beta1 m + (1 - beta1) g) + weight_decay p);
// m = beta2 m + (1 - beta2) g.
struct LionOptions {
  double lr = 1e-4;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double weight_decay = 0;
  Schedule schedule{};
  ParamMask decay_mask{};
};

class Optimizer {
 public:
  // Any gradient transformation (a chain ending in scale_by_learning_rate, usually).
  Optimizer(GradientTransformation transformation);  // NOLINT(google-explicit-constructor)
  // `settings`: what describe() shows after the hyperparameters ("schedule=warmup_cosine").
  Optimizer(std::string name, GradientTransformation transformation, std::string settings = {});

  // Fresh state for these parameters: the hyperparameters (scalars of the parameters' widest
  // float dtype) followed by the transformation's state.
  std::vector<Array> init(const std::vector<Array>& params) const;
  // The state's names given the parameters' ("hyper.lr", "adam.m.0.weight", "adam.step").
  std::vector<std::string> state_names(const std::vector<std::string>& param_names) const;
  // Inside a trace: the updated parameters and state. `names` are the parameters' names (for
  // masks; "0", "1", ... when empty). Raises Error when the counts or the shapes of params,
  // grads and state do not match.
  std::pair<std::vector<Tensor>, std::vector<Tensor>> update(const std::vector<Tensor>& params,
                                                             const std::vector<Tensor>& grads,
                                                             const std::vector<Tensor>& state,
                                                             const std::vector<std::string>& names = {}) const;

  // The hyperparameters with the values a fresh state gets.
  const std::vector<Hyperparameter>& hyperparameters() const { return transformation_.hyperparameters; }
  // A hyperparameter's value in `state` (init's layout). Raises Error naming the known ones
  // when there is no such hyperparameter.
  double hyperparameter(const std::vector<Array>& state, const std::string& name) const;
  // Sets it for the next steps: no re-trace, no recompile.
  void set_hyperparameter(std::vector<Array>& state, const std::string& name, double value) const;

  // "adam(lr=0.001, beta1=0.9, ...)".
  std::string describe() const;
  const GradientTransformation& transformation() const { return transformation_; }

 private:
  size_t hyper_index(const std::vector<Array>& state, const std::string& name, const char* op) const;

  std::string name_;
  std::string settings_;
  GradientTransformation transformation_;
};

Optimizer sgd(SgdOptions opt = {});
Optimizer adam(AdamOptions opt = {});
// AdamW: AdamOptions with weight_decay defaulting to 0.01 as in PyTorch.
Optimizer adamw(AdamOptions opt = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01});
Optimizer rmsprop(RmsPropOptions opt = {});
Optimizer adagrad(AdagradOptions opt = {});
Optimizer lion(LionOptions opt = {});

}  // namespace fluxion::nn
