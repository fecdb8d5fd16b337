#include "fluxion/nn/trainer.h"

#include "dsl/src/nn/data_parallel.h"
#include "fluxion/autodiff.h"
#include "fluxion/nn/losses.h"
#include "fluxion/ops.h"
#include "fluxion/runtime.h"

namespace fluxion::nn {

Trainer::Trainer(Model model, LossFn loss, Optimizer optimizer, Backend backend, TrainerOptions options)
    : model_(model),
      optimizer_(optimizer),
      backend_(backend),
      options_(options),
      step_(StepFn([model, loss, optimizer, options, names = model.param_names()](
                       const std::vector<Tensor>& p, const std::vector<Tensor>& s, const Tensor& x, const Tensor& y) {
              auto objective = [&](const std::vector<Tensor>& q) { return loss(model(q, x), y); };
              auto [value, grads] = value_and_grad(objective)(p);
              if (options.data_parallel) {
                grads = detail::all_reduce_in_buckets(grads, options.bucket_bytes);
                value = all_reduce(value, ReduceOp::Mean);
              }
              auto [next, next_state] = optimizer.update(p, grads, s, names);
              return std::make_tuple(value, next, next_state);
            }),
            backend),
      predict_(PredictFn([model](const std::vector<Tensor>& p, const Tensor& x) { return model(p, x); }), backend),
      evaluate_(EvalFn([model, loss](const std::vector<Tensor>& p, const Tensor& x, const Tensor& y) {
                  Tensor out = model(p, x);
                  Tensor total = loss(out, y) * static_cast<double>(x.dim(0));
                  return std::make_pair(total, correct_count(out, y));
                }),
                backend) {}

TrainState Trainer::init(uint64_t seed) const {
  TrainState s;
  s.params = model_.init(seed);
  s.opt_state = optimizer_.init(s.params);
  if (options_.data_parallel) {
    detail::broadcast_from_rank0(s.params);
    detail::broadcast_from_rank0(s.opt_state);
  }
  return s;
}

Compiled Trainer::step_program(const TrainState& state, const Array& x, const Array& y) const {
  Compiled program = step_.lower(state.params, state.opt_state, x, y);
  // The backend too: its schedule decides the order of the step's collectives.
  if (options_.data_parallel) {
    detail::check_same_program(program.hash() ^ (static_cast<uint64_t>(backend_) + 1) * 0x9e3779b97f4a7c15ull,
                               "nn::Trainer::step");
  }
  return program;
}

Array Trainer::step(TrainState& state, const Array& x, const Array& y) const {
  Compiled program = step_program(state, x, y);
  if (check_numerics()) {
    // The results are new arrays, which replace state's only after the call succeeded: a step
    // the numerics check rejects leaves `state` as it was.
    auto [loss, params, opt_state] = step_(state.params, state.opt_state, x, y);
    state.params = std::move(params);
    state.opt_state = std::move(opt_state);
    return loss;
  }
  // Written in place: no allocation of parameter-sized results per step (on Vulkan, the state's
  // arrays take the step's device buffers, and theirs return to the pool for the next step).
  thread_local std::vector<Array> inputs, outputs;
  inputs.clear();
  outputs.clear();
  inputs.insert(inputs.end(), state.params.begin(), state.params.end());
  inputs.insert(inputs.end(), state.opt_state.begin(), state.opt_state.end());
  inputs.push_back(x);
  inputs.push_back(y);
  Array loss = Array::empty(program.output_types()[0].dtype, program.output_types()[0].shape);
  outputs.push_back(loss);
  outputs.insert(outputs.end(), state.params.begin(), state.params.end());
  outputs.insert(outputs.end(), state.opt_state.begin(), state.opt_state.end());
  struct Release {  // the buffers must not keep the caller's arrays alive
    ~Release() {
      inputs.clear();
      outputs.clear();
    }
  } release;
  program.run_into(inputs, outputs);
  return loss;
}

Array Trainer::predict(const std::vector<Array>& params, const Array& x) const { return predict_(params, x); }

std::pair<Array, Array> Trainer::evaluate(const std::vector<Array>& params, const Array& x, const Array& y) const {
  return evaluate_(params, x, y);
}

}  // namespace fluxion::nn
