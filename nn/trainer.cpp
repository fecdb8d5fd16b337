#include "fluxion/nn/trainer.h"

#include "fluxion/autodiff.h"
#include "fluxion/error.h"
#include "fluxion/nn/losses.h"
#include "fluxion/ops.h"
#include "fluxion/runtime.h"
#include "nn/data_parallel.h"
#include "nn/mixed_precision.h"

namespace fluxion::nn {

namespace {

// Error unless the model (without state) can run from parameters alone.
void expect_stateless(const Model& model, const char* op) {
  if (!model.state_specs().empty())
    fluxion::detail::fail(op, "the model has state (" + model.state_names()[0] + ", ...): pass the TrainState");
}

// The ranks' mean of every float state tensor: batch statistics gathered on different shards
// must not make the ranks' models drift apart.
std::vector<Tensor> averaged_over_ranks(std::vector<Tensor> state) {
  for (Tensor& s : state) s = all_reduce(s, ReduceOp::Mean);
  return state;
}

// The dtype the parameters share (the first float one's; f32 for a model without any).
DType param_dtype(const std::vector<Tensor>& p) {
  for (const Tensor& t : p)
    if (is_float(t.dtype())) return t.dtype();
  return DType::f32;
}

}  // namespace

Trainer::Trainer(Model model, LossFn loss, Optimizer optimizer, Backend backend, TrainerOptions options)
    : model_(model),
      optimizer_(optimizer),
      backend_(backend),
      options_(options),
      step_(StepFn([model, loss, optimizer, options, names = model.param_names()](
                       const Tensors& p, const Tensors& opt_state, const Tensors& model_state, const Tensors& scale,
                       const Tensor& step, const Tensor& key, const Tensor& x, const Tensor& y) {
              Tensor step_key = random::fold_in(key, step);
              if (options.data_parallel) step_key = random::fold_in(step_key, rank_index());
              detail::Autocast autocast(options.precision, param_dtype(p));
              auto objective = [&](const Tensors& q) {
                Applied a =
                    model.apply(autocast.down(q), model_state, autocast.down(x), {.training = true, .key = step_key});
                Tensor value = loss(autocast.up(a.output, autocast.param_dtype()), y);
                Tensors state;
                for (size_t i = 0; i < a.state.size(); ++i)
                  state.push_back(autocast.up(a.state[i], model_state[i].dtype()));
                return std::make_pair(scale.empty() ? value : value * scale[0], state);
              };
              auto [value, next_model_state, grads] = value_and_grad(objective, {0}, {.has_aux = true})(p);
              if (!scale.empty()) {
                value = value / scale[0];
                for (Tensor& g : grads) g = g / scale[0];
              }
              if (options.data_parallel) {
                grads = detail::all_reduce_in_buckets(grads, options.bucket_bytes);
                value = all_reduce(value, ReduceOp::Mean);
                next_model_state = averaged_over_ranks(next_model_state);
              }
              auto [next, next_opt_state] = optimizer.update(p, grads, opt_state, names);
              if (scale.empty())
                return std::make_tuple(value, next, next_opt_state, next_model_state, scale, step + 1.0);
              // A step with a non-finite gradient changes nothing but the scale: not the model
              // state either, whose statistics an overflowing forward pass would have spoilt.
              Tensor ok = detail::all_finite(grads);
              return std::make_tuple(value, detail::unless_skipped(ok, next, p),
                                     detail::unless_skipped(ok, next_opt_state, opt_state),
                                     detail::unless_skipped(ok, next_model_state, model_state),
                                     detail::next_loss_scale(options.precision, scale, ok), step + 1.0);
            }),
            backend),
      predict_(PredictFn([model, options](const Tensors& p, const Tensors& s, const Tensor& x) {
                 detail::Autocast autocast(options.precision, param_dtype(p));
                 return autocast.up(model.apply(autocast.down(p), s, autocast.down(x), {}).output,
                                    autocast.param_dtype());
               }),
               backend),
      evaluate_(EvalFn([model, loss, options](const Tensors& p, const Tensors& s, const Tensor& x, const Tensor& y) {
                  detail::Autocast autocast(options.precision, param_dtype(p));
                  Tensor out = autocast.up(model.apply(autocast.down(p), s, autocast.down(x), {}).output,
                                           autocast.param_dtype());
                  Tensor total = loss(out, y) * static_cast<double>(x.dim(0));
                  return std::make_pair(total, correct_count(out, y));
                }),
                backend) {}

TrainState Trainer::init(uint64_t seed, DType dtype) const {
  TrainState s;
  s.params = model_.init(seed, dtype);
  s.opt_state = optimizer_.init(s.params);
  s.model_state = model_.init_state(dtype);
  s.step = Array::scalar(int32_t{0});
  if (options_.precision.loss_scaling) {
    double v = options_.precision.initial_scale;
    s.loss_scale = {dtype == DType::f64 ? Array::scalar(v) : Array::scalar(static_cast<float>(v)),
                    Array::scalar(int32_t{0}), Array::scalar(int32_t{0})};
  }
  // random::key's layout: the seed's two 32-bit halves.
  s.key = Array(std::vector<int32_t>{static_cast<int32_t>(static_cast<uint32_t>(seed)),
                                     static_cast<int32_t>(static_cast<uint32_t>(seed >> 32))},
                {2});
  if (options_.data_parallel) {
    detail::broadcast_from_rank0(s.params);
    detail::broadcast_from_rank0(s.opt_state);
    detail::broadcast_from_rank0(s.model_state);
  }
  return s;
}

Compiled Trainer::step_program(const TrainState& state, const Array& x, const Array& y) const {
  Compiled program =
      step_.lower(state.params, state.opt_state, state.model_state, state.loss_scale, state.step, state.key, x, y);
  // The backend too: its schedule decides the order of the step's collectives.
  if (options_.data_parallel) {
    detail::check_same_program(program.hash() ^ (static_cast<uint64_t>(backend_) + 1) * 0x9e3779b97f4a7c15ull,
                               "nn::Trainer::step");
  }
  return program;
}

Array Trainer::step(TrainState& state, const Array& x, const Array& y, std::source_location loc) const {
  fluxion::detail::CallSite site(loc, /*covers=*/true);  // the layers' and the loss's errors name this line
  Compiled program = step_program(state, x, y);
  if (check_numerics()) {
    // The results are new arrays, which replace state's only after the call succeeded: a step
    // the numerics check rejects leaves `state` as it was.
    auto [loss, params, opt_state, model_state, loss_scale, step] =
        step_(state.params, state.opt_state, state.model_state, state.loss_scale, state.step, state.key, x, y);
    state.params = std::move(params);
    state.opt_state = std::move(opt_state);
    state.model_state = std::move(model_state);
    state.loss_scale = std::move(loss_scale);
    state.step = std::move(step);
    return loss;
  }
  // Written in place: no allocation of parameter-sized results per step (on Vulkan, the state's
  // arrays take the step's device buffers, and theirs return to the pool for the next step).
  thread_local std::vector<Array> inputs, outputs;
  inputs.clear();
  outputs.clear();
  for (const std::vector<Array>* part : {&state.params, &state.opt_state, &state.model_state, &state.loss_scale})
    inputs.insert(inputs.end(), part->begin(), part->end());
  inputs.insert(inputs.end(), {state.step, state.key, x, y});
  Array loss = Array::empty(program.output_types()[0].dtype, program.output_types()[0].shape);
  outputs.push_back(loss);
  for (const std::vector<Array>* part : {&state.params, &state.opt_state, &state.model_state, &state.loss_scale})
    outputs.insert(outputs.end(), part->begin(), part->end());
  outputs.push_back(state.step);
  struct Release {  // the buffers must not keep the caller's arrays alive
    ~Release() {
      inputs.clear();
      outputs.clear();
    }
  } release;
  program.run_into(inputs, outputs);
  return loss;
}

Array Trainer::predict(const TrainState& state, const Array& x, std::source_location loc) const {
  fluxion::detail::CallSite site(loc, /*covers=*/true);
  return predict_(state.params, state.model_state, x);
}

Array Trainer::predict(const std::vector<Array>& params, const Array& x, std::source_location loc) const {
  fluxion::detail::CallSite site(loc, /*covers=*/true);
  expect_stateless(model_, "nn::Trainer::predict");
  return predict_(params, std::vector<Array>{}, x);
}

std::pair<Array, Array> Trainer::evaluate(const TrainState& state, const Array& x, const Array& y,
                                          std::source_location loc) const {
  fluxion::detail::CallSite site(loc, /*covers=*/true);
  return evaluate_(state.params, state.model_state, x, y);
}

std::pair<Array, Array> Trainer::evaluate(const std::vector<Array>& params, const Array& x, const Array& y,
                                          std::source_location loc) const {
  fluxion::detail::CallSite site(loc, /*covers=*/true);
  expect_stateless(model_, "nn::Trainer::evaluate");
  return evaluate_(params, std::vector<Array>{}, x, y);
}

}  // namespace fluxion::nn
