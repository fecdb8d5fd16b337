// The compiled training step: a model, a loss and an optimizer traced into one program per input
// shape, and what a training run carries from step to step.
#pragma once

#include <cstdint>
#include <functional>
#include <source_location>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/backend.h"
#include "fluxion/jit.h"
#include "fluxion/nn/layer.h"
#include "fluxion/nn/optim.h"

namespace fluxion::nn {

// What a training run carries from step to step.
struct TrainState {
  std::vector<Array> params;
  std::vector<Array> opt_state;    // Optimizer::init's layout (hyperparameters first)
  std::vector<Array> model_state;  // Model::state_specs()'s (batch norm's running statistics)
  // A state built by hand (not by Trainer::init) starts at step 0 with seed 0's key, so that
  // save_checkpoint accepts it.
  Array step = Array::scalar(int32_t{0});              // i32 scalar: steps taken
  Array key = Array(std::vector<int32_t>{0, 0}, {2});  // i32[2]: the run's random key; step k's is fold_in(key, k)
  // With dynamic loss scaling (MixedPrecision::loss_scaling): the scale (a scalar of the
  // parameters' dtype), the finite steps since it last changed and the steps skipped so far
  // (i32 scalars). Else empty.
  std::vector<Array> loss_scale;
};

// Mixed-precision training (docs/precision.md, "Training"), as torch.autocast with a
// GradScaler and JAX's jmp policies do it: parameters, optimizer state and model state stay in
// their dtype (f32); the forward and backward passes run in `compute` (the parameters and float
// inputs cast to it inside the step; layer and batch norm and attention's softmax compute in
// f32), and the model's output is cast back before the loss, so the loss, the gradients
// reaching the parameters and the update are f32.
struct MixedPrecision {
  DType compute = DType::f32;  // bf16 or f16; f32 or f64: no policy (the parameters' dtype throughout)
  // Dynamic loss scaling, for f16's narrow range: the loss is multiplied by the scale before
  // differentiation and the gradients divided by it after. A step whose gradients are not all
  // finite is skipped (parameters, optimizer and model state unchanged) and halves the scale;
  // `growth_interval` finite steps in a row double it.
  bool loss_scaling = false;
  double initial_scale = 65536;
  double growth_factor = 2;
  double backoff_factor = 0.5;
  int32_t growth_interval = 2000;
  // With compute f16: the products of the step, of predictions and of evaluation may
  // accumulate in f16 (fluxion::F16Sums) where a backend has f16 arithmetic.
  bool f16_sums = false;
  // The policies of a --precision flag: "f32" (off), "bf16", "f16" (with loss scaling).
  static MixedPrecision named(const std::string& name);
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
  MixedPrecision precision = {};
};

// A model, a loss and an optimizer compiled into one training step per input shape.
class Trainer {
 public:
  Trainer(Model model, LossFn loss, Optimizer optimizer, Backend backend = default_backend(),
          TrainerOptions options = {});
  // Parameters from the model's initialisers (seeded), fresh optimizer and model state, step 0
  // and the random key of `seed` (in data-parallel mode, rank 0's, on every rank); parameters
  // and model state in `dtype` (f32 or f64, the dtype of the inputs the model will see); the
  // loss scale's initial value when the options scale the loss.
  TrainState init(uint64_t seed, DType dtype = DType::f32) const;
  // Errors raised by the model, the loss or the call name the caller's line (`loc`).
  // One compiled call: forward in training mode, loss, backward and update of `state` for the
  // batch (x, y). Layers draw their random numbers from fold_in(fold_in(key, step), layer) (and
  // the rank in data-parallel mode), so a run is reproducible and a resumed run continues the
  // same stream. Returns the batch's loss, which stays on the device with Vulkan until read.
  // The state's arrays are updated in place (their storage is reused, so copies of them that
  // share it see the update: clone() what you keep; on Vulkan they stay on the device); when
  // the numerics check is on, the step's new arrays replace state's after the call succeeded.
  Array step(TrainState& state, const Array& x, const Array& y,
             std::source_location loc = std::source_location::current()) const;
  // The model's output for x in evaluation mode.
  Array predict(const TrainState& state, const Array& x,
                std::source_location loc = std::source_location::current()) const;
  // The same for a model without state.
  Array predict(const std::vector<Array>& params, const Array& x,
                std::source_location loc = std::source_location::current()) const;
  // In evaluation mode: the loss summed over the batch's rows (its mean times the batch size)
  // and the number of rows whose argmax matches the label (for classifiers; i32).
  std::pair<Array, Array> evaluate(const TrainState& state, const Array& x, const Array& y,
                                   std::source_location loc = std::source_location::current()) const;
  // The same for a model without state.
  std::pair<Array, Array> evaluate(const std::vector<Array>& params, const Array& x, const Array& y,
                                   std::source_location loc = std::source_location::current()) const;
  const Model& model() const { return model_; }
  const Optimizer& optimizer() const { return optimizer_; }
  Backend backend() const { return backend_; }
  const TrainerOptions& options() const { return options_; }

 private:
  // The compiled step for these arguments; in data-parallel mode, checked against the other
  // ranks' (8 bytes exchanged a step).
  Compiled step_program(const TrainState& state, const Array& x, const Array& y) const;

  using Tensors = std::vector<Tensor>;
  // (params, opt_state, model_state, loss_scale, step, key, x, y)
  //   -> (loss, params, opt_state, model_state, loss_scale, step + 1)
  using StepFn = std::function<std::tuple<Tensor, Tensors, Tensors, Tensors, Tensors, Tensor>(
      const Tensors&, const Tensors&, const Tensors&, const Tensors&, const Tensor&, const Tensor&, const Tensor&,
      const Tensor&)>;
  using PredictFn = std::function<Tensor(const Tensors&, const Tensors&, const Tensor&)>;
  using EvalFn = std::function<std::pair<Tensor, Tensor>(const Tensors&, const Tensors&, const Tensor&, const Tensor&)>;

  Model model_;
  Optimizer optimizer_;
  Backend backend_;
  TrainerOptions options_;
  Jit<StepFn> step_;
  Jit<PredictFn> predict_;
  Jit<EvalFn> evaluate_;
};

}  // namespace fluxion::nn
