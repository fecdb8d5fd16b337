// Optimizers and the compiled training step. An optimizer's update is traced into the same
// program as the forward and backward pass, so one call of a training step runs forward,
// backward and the update, and the parameters and the optimizer state never leave the backend
// (on the Vulkan backend they stay in device memory from one step to the next).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/backend.h"
#include "fluxion/jit.h"
#include "fluxion/nn/layer.h"

namespace fluxion::nn {

// PyTorch's SGD: g += weight_decay * p; v = momentum * v + g; p -= lr * (nesterov ? g +
// momentum * v : v). Without momentum there is no state.
struct SgdOptions {
  double lr = 0.01;
  double momentum = 0;
  bool nesterov = false;
  double weight_decay = 0;
};

// Adam (weight_decay adds weight_decay * p to the gradient) and AdamW (weight_decay shrinks the
// parameters directly: p -= lr * weight_decay * p, then the Adam step), with bias correction.
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
};

namespace detail {
struct OptimizerRule;
}

class Optimizer {
 public:
  explicit Optimizer(std::shared_ptr<const detail::OptimizerRule> rule) : rule_(std::move(rule)) {}
  // Fresh state for these parameters (zeros; Adam's step count 0).
  std::vector<Array> init(const std::vector<Array>& params) const;
  // The state's names given the parameters' ("momentum.0.weight", "adam.m.0.weight", "adam.step").
  std::vector<std::string> state_names(const std::vector<std::string>& param_names) const;
  // Inside a trace: the updated parameters and state. Raises Error when the counts or the
  // shapes of params, grads and state do not match.
  std::pair<std::vector<Tensor>, std::vector<Tensor>> update(const std::vector<Tensor>& params,
                                                             const std::vector<Tensor>& grads,
                                                             const std::vector<Tensor>& state) const;
  // "adam(lr=0.001, beta1=0.9, ...)".
  std::string describe() const;

 private:
  std::shared_ptr<const detail::OptimizerRule> rule_;
};

Optimizer sgd(SgdOptions opt = {});
Optimizer adam(AdamOptions opt = {});
// AdamW: AdamOptions with weight_decay defaulting to 0.01 as in PyTorch.
Optimizer adamw(AdamOptions opt = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01});

// What a training run carries from step to step.
struct TrainState {
  std::vector<Array> params;
  std::vector<Array> opt_state;
};

// loss(model output, target) -> float scalar.
using LossFn = std::function<Tensor(const Tensor& output, const Tensor& target)>;

struct TrainerOptions {
  // Data-parallel training across the ranks of a job (fluxion/distributed.h, after init; docs/
  // distributed.md). Every rank runs the same step on its own shard of each global batch
  // (data::Loader::Options::rank/ranks); inside the compiled step the gradients are averaged
  // over the ranks before the update, in rank order, so every rank holds the same parameters,
  // bit for bit, after every step, and the step returns the ranks' mean loss. init() gives every
  // rank rank 0's parameters, and every step first checks that every rank runs the same
  // program. With one rank it is ordinary training.
  bool data_parallel = false;
  // Gradients are all-reduced in buckets of about this many bytes, filled in the order the
  // backward pass produces them (PyTorch DDP's default size).
  int64_t bucket_bytes = int64_t{25} << 20;
};

// A model, a loss and an optimizer compiled into one training step per input shape.
class Trainer {
 public:
  Trainer(Model model, LossFn loss, Optimizer optimizer, Backend backend = default_backend(),
          TrainerOptions options = {});
  // Parameters from the model's initialisers (seeded) and fresh optimizer state (in
  // data-parallel mode, rank 0's, on every rank).
  TrainState init(uint64_t seed) const;
  // One compiled call: forward, loss, backward and update of `state` for the batch (x, y).
  // Returns the batch's loss, which stays on the device with Vulkan until read. The parameters
  // and state are updated in place (their Arrays' storage is reused, so copies of them that
  // share it see the update: clone() what you keep; on Vulkan they stay on the device); when
  // the numerics check is on, the step's new arrays replace state's after the call succeeded.
  Array step(TrainState& state, const Array& x, const Array& y) const;
  // The model's output for x.
  Array predict(const std::vector<Array>& params, const Array& x) const;
  // The loss summed over the batch's rows (its mean times the batch size) and the number of
  // rows whose argmax matches the label (for classifiers; i32).
  std::pair<Array, Array> evaluate(const std::vector<Array>& params, const Array& x, const Array& y) const;
  const Model& model() const { return model_; }
  const Optimizer& optimizer() const { return optimizer_; }
  Backend backend() const { return backend_; }
  const TrainerOptions& options() const { return options_; }

 private:
  // The compiled step for these arguments; in data-parallel mode, checked against the other
  // ranks' (8 bytes exchanged a step).
  Compiled step_program(const TrainState& state, const Array& x, const Array& y) const;

  using StepFn = std::function<std::tuple<Tensor, std::vector<Tensor>, std::vector<Tensor>>(
      const std::vector<Tensor>&, const std::vector<Tensor>&, const Tensor&, const Tensor&)>;
  using PredictFn = std::function<Tensor(const std::vector<Tensor>&, const Tensor&)>;
  using EvalFn = std::function<std::pair<Tensor, Tensor>(const std::vector<Tensor>&, const Tensor&, const Tensor&)>;

  Model model_;
  Optimizer optimizer_;
  Backend backend_;
  TrainerOptions options_;
  Jit<StepFn> step_;
  Jit<PredictFn> predict_;
  Jit<EvalFn> evaluate_;
};

}  // namespace fluxion::nn
