#include "fluxion/nn/optim.h"

#include <cstdio>

#include "dsl/src/nn/data_parallel.h"
#include "fluxion/autodiff.h"
#include "fluxion/error.h"
#include "fluxion/nn/losses.h"
#include "fluxion/ops.h"
#include "fluxion/runtime.h"

namespace fluxion::nn {

namespace detail {

// What each optimizer defines: its state per parameter and its update rule.
struct OptimizerRule {
  virtual ~OptimizerRule() = default;
  virtual std::vector<Array> init(const std::vector<Array>& params) const = 0;
  virtual std::vector<std::string> state_names(const std::vector<std::string>& param_names) const = 0;
  virtual std::pair<std::vector<Tensor>, std::vector<Tensor>> update(const std::vector<Tensor>& params,
                                                                     const std::vector<Tensor>& grads,
                                                                     const std::vector<Tensor>& state) const = 0;
  virtual std::string describe() const = 0;
};

}  // namespace detail

namespace {

std::vector<Array> zeros_like_all(const std::vector<Array>& params) {
  std::vector<Array> out;
  for (const Array& p : params) out.emplace_back(p.dtype(), p.shape());
  return out;
}

std::vector<std::string> prefixed(const std::string& prefix, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& n : names) out.push_back(prefix + n);
  return out;
}

class Sgd : public detail::OptimizerRule {
 public:
  explicit Sgd(SgdOptions o) : options_(o) {}
  std::vector<Array> init(const std::vector<Array>& params) const override {
    return options_.momentum != 0 ? zeros_like_all(params) : std::vector<Array>{};
  }
  std::vector<std::string> state_names(const std::vector<std::string>& names) const override {
    return options_.momentum != 0 ? prefixed("momentum.", names) : std::vector<std::string>{};
  }
  std::pair<std::vector<Tensor>, std::vector<Tensor>> update(const std::vector<Tensor>& params,
                                                             const std::vector<Tensor>& grads,
                                                             const std::vector<Tensor>& state) const override {
    std::vector<Tensor> next, next_state;
    for (size_t i = 0; i < params.size(); ++i) {
      Tensor g = options_.weight_decay != 0 ? grads[i] + params[i] * options_.weight_decay : grads[i];
      if (options_.momentum != 0) {
        Tensor v = state[i] * options_.momentum + g;
        next_state.push_back(v);
        g = options_.nesterov ? g + v * options_.momentum : v;
      }
      next.push_back(params[i] - g * options_.lr);
    }
    return {next, next_state};
  }
  std::string describe() const override {
    char buf[160];
    std::snprintf(buf, sizeof buf, "sgd(lr=%g, momentum=%g%s, weight_decay=%g)", options_.lr, options_.momentum,
                  options_.nesterov ? ", nesterov" : "", options_.weight_decay);
    return buf;
  }

 private:
  SgdOptions options_;
};

class Adam : public detail::OptimizerRule {
 public:
  Adam(AdamOptions o, bool decoupled) : options_(o), decoupled_(decoupled) {}
  // [step, m..., v...]
  std::vector<Array> init(const std::vector<Array>& params) const override {
    std::vector<Array> out{Array::scalar(0.0f)};
    for (int k = 0; k < 2; ++k)
      for (Array& z : zeros_like_all(params)) out.push_back(z);
    return out;
  }
  std::vector<std::string> state_names(const std::vector<std::string>& names) const override {
    std::vector<std::string> out{"adam.step"};
    for (const char* moment : {"adam.m.", "adam.v."})
      for (const std::string& n : prefixed(moment, names)) out.push_back(n);
    return out;
  }
  std::pair<std::vector<Tensor>, std::vector<Tensor>> update(const std::vector<Tensor>& params,
                                                             const std::vector<Tensor>& grads,
                                                             const std::vector<Tensor>& state) const override {
    size_t n = params.size();
    Tensor t = state[0] + 1.0;
    // The bias corrections depend only on the step count: computed once per step, not per element.
    Tensor c1 = 1.0 - pow(options_.beta1, t), c2 = sqrt(1.0 - pow(options_.beta2, t));
    std::vector<Tensor> next, ms, vs;
    for (size_t i = 0; i < n; ++i) {
      Tensor p = params[i], g = grads[i];
      if (options_.weight_decay != 0) {
        if (decoupled_) p = p - p * (options_.lr * options_.weight_decay);
        else g = g + p * options_.weight_decay;
      }
      Tensor m = state[1 + i] * options_.beta1 + g * (1 - options_.beta1);
      Tensor v = state[1 + n + i] * options_.beta2 + square(g) * (1 - options_.beta2);
      Tensor m_hat = m / cast(c1, p.dtype()), v_hat_sqrt = sqrt(v) / cast(c2, p.dtype());
      next.push_back(p - m_hat / (v_hat_sqrt + options_.eps) * options_.lr);
      ms.push_back(m);
      vs.push_back(v);
    }
    std::vector<Tensor> next_state{t};
    next_state.insert(next_state.end(), ms.begin(), ms.end());
    next_state.insert(next_state.end(), vs.begin(), vs.end());
    return {next, next_state};
  }
  std::string describe() const override {
    char buf[200];
    std::snprintf(buf, sizeof buf, "%s(lr=%g, beta1=%g, beta2=%g, eps=%g, weight_decay=%g)",
                  decoupled_ ? "adamw" : "adam", options_.lr, options_.beta1, options_.beta2, options_.eps,
                  options_.weight_decay);
    return buf;
  }

 private:
  AdamOptions options_;
  bool decoupled_;
};

void check_update_operands(const std::vector<Tensor>& params, const std::vector<Tensor>& grads,
                           const std::vector<Tensor>& state, size_t expected_state) {
  if (grads.size() != params.size() || state.size() != expected_state) {
    fluxion::detail::fail("nn::Optimizer::update", std::to_string(params.size()) + " parameters, " +
                                                       std::to_string(grads.size()) + " gradients and " +
                                                       std::to_string(state.size()) + " state tensors: expected " +
                                                       std::to_string(params.size()) + " gradients and " +
                                                       std::to_string(expected_state) + " state tensors");
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].type() != grads[i].type())
      fluxion::detail::fail("nn::Optimizer::update", "parameter " + std::to_string(i) + " is " + params[i].type().str() +
                                                         " but its gradient is " + grads[i].type().str());
  }
}

}  // namespace

std::vector<Array> Optimizer::init(const std::vector<Array>& params) const { return rule_->init(params); }

std::vector<std::string> Optimizer::state_names(const std::vector<std::string>& param_names) const {
  return rule_->state_names(param_names);
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> Optimizer::update(const std::vector<Tensor>& params,
                                                                      const std::vector<Tensor>& grads,
                                                                      const std::vector<Tensor>& state) const {
  std::vector<std::string> names(params.size());
  check_update_operands(params, grads, state, rule_->state_names(names).size());
  return rule_->update(params, grads, state);
}

std::string Optimizer::describe() const { return rule_->describe(); }

Optimizer sgd(SgdOptions opt) { return Optimizer(std::make_shared<Sgd>(opt)); }
Optimizer adam(AdamOptions opt) { return Optimizer(std::make_shared<Adam>(opt, false)); }
Optimizer adamw(AdamOptions opt) { return Optimizer(std::make_shared<Adam>(opt, true)); }

Trainer::Trainer(Model model, LossFn loss, Optimizer optimizer, Backend backend, TrainerOptions options)
    : model_(model),
      optimizer_(optimizer),
      backend_(backend),
      options_(options),
      step_(StepFn([model, loss, optimizer, options](const std::vector<Tensor>& p, const std::vector<Tensor>& s,
                                                     const Tensor& x, const Tensor& y) {
              auto objective = [&](const std::vector<Tensor>& q) { return loss(model(q, x), y); };
              auto [value, grads] = value_and_grad(objective)(p);
              if (options.data_parallel) {
                grads = detail::all_reduce_in_buckets(grads, options.bucket_bytes);
                value = all_reduce(value, ReduceOp::Mean);
              }
              auto [next, next_state] = optimizer.update(p, grads, s);
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
