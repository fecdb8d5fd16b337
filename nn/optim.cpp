#include "fluxion/nn/optim.h"

#include "fluxion/error.h"
#include "fluxion/ops.h"

namespace fluxion::nn {

namespace {

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
      fluxion::detail::fail("nn::Optimizer::update", "parameter " + std::to_string(i) + " is " +
                                                         params[i].type().str() + " but its gradient is " +
                                                         grads[i].type().str());
  }
}

// The optional links every named optimizer shares: weight decay coupled into the gradient
// (PyTorch's weight_decay of SGD, Adam, RMSprop, Adagrad) goes first.
std::vector<GradientTransformation> coupled_decay(double weight_decay, const ParamMask& mask) {
  if (weight_decay == 0) return {};
  return {add_decayed_weights(weight_decay, mask)};
}

GradientTransformation ending_with_rate(std::vector<GradientTransformation> links, double lr,
                                        const Schedule& schedule) {
  links.push_back(scale_by_learning_rate(lr, schedule));
  return chain(std::move(links));
}

// What a named optimizer's description shows after its hyperparameters: the schedule's shape
// (its numbers are hyperparameters).
std::string schedule_settings(const Schedule& schedule) {
  return schedule.constant() ? std::string() : "schedule=" + schedule.structure();
}

}  // namespace

Optimizer::Optimizer(GradientTransformation transformation) : Optimizer("", std::move(transformation)) {}

Optimizer::Optimizer(std::string name, GradientTransformation transformation, std::string settings)
    : name_(std::move(name)), settings_(std::move(settings)), transformation_(std::move(transformation)) {
  if (!transformation_.update)
    fluxion::detail::fail("nn::Optimizer", "the transformation '" + transformation_.name + "' has no update");
}

std::vector<Array> Optimizer::init(const std::vector<Array>& params) const {
  bool wide = false;
  for (const Array& p : params) wide = wide || p.dtype() == DType::f64;
  std::vector<Array> out;
  for (const Hyperparameter& h : hyperparameters())
    out.push_back(wide ? Array::scalar(h.value) : Array::scalar(static_cast<float>(h.value)));
  if (transformation_.init) {
    for (Array& a : transformation_.init(params)) out.push_back(a);
  }
  return out;
}

std::vector<std::string> Optimizer::state_names(const std::vector<std::string>& param_names) const {
  std::vector<std::string> out;
  for (const Hyperparameter& h : hyperparameters()) out.push_back("hyper." + h.name);
  if (transformation_.state_names) {
    for (std::string& n : transformation_.state_names(param_names)) out.push_back(n);
  }
  return out;
}

std::pair<std::vector<Tensor>, std::vector<Tensor>> Optimizer::update(const std::vector<Tensor>& params,
                                                                      const std::vector<Tensor>& grads,
                                                                      const std::vector<Tensor>& state,
                                                                      const std::vector<std::string>& names) const {
  std::vector<std::string> labels = names;
  if (labels.empty()) {
    for (size_t i = 0; i < params.size(); ++i) labels.push_back(std::to_string(i));
  }
  if (labels.size() != params.size()) {
    fluxion::detail::fail("nn::Optimizer::update", std::to_string(labels.size()) + " names for " +
                                                       std::to_string(params.size()) + " parameters");
  }
  check_update_operands(params, grads, state, state_names(labels).size());
  size_t h = hyperparameters().size();
  std::span<const Tensor> all(state);
  TransformResult r = transformation_.update({grads, params, labels, all.first(h), all.subspan(h)});
  std::vector<Tensor> next;
  for (size_t i = 0; i < params.size(); ++i) next.push_back(params[i] + r.updates[i]);
  std::vector<Tensor> next_state(state.begin(), state.begin() + static_cast<std::ptrdiff_t>(h));
  next_state.insert(next_state.end(), r.state.begin(), r.state.end());
  return {next, next_state};
}

size_t Optimizer::hyper_index(const std::vector<Array>& state, const std::string& name, const char* op) const {
  const std::vector<Hyperparameter>& hs = hyperparameters();
  std::string known;
  for (size_t i = 0; i < hs.size(); ++i) {
    if (hs[i].name == name) {
      if (state.size() < hs.size() || !state[i].shape().empty())
        fluxion::detail::fail(op, "the state does not hold this optimizer's hyperparameters (use Optimizer::init)");
      return i;
    }
    known += (known.empty() ? "" : ", ") + hs[i].name;
  }
  fluxion::detail::fail(op, "no hyperparameter '" + name + "' in " + describe() +
                                " (it has: " + (known.empty() ? std::string("none") : known) + ")");
}

double Optimizer::hyperparameter(const std::vector<Array>& state, const std::string& name) const {
  return state[hyper_index(state, name, "nn::Optimizer::hyperparameter")].item();
}

void Optimizer::set_hyperparameter(std::vector<Array>& state, const std::string& name, double value) const {
  size_t i = hyper_index(state, name, "nn::Optimizer::set_hyperparameter");
  state[i] = state[i].dtype() == DType::f64 ? Array::scalar(value) : Array::scalar(static_cast<float>(value));
}

std::string Optimizer::describe() const {
  if (name_.empty()) return transformation_.describe();
  GradientTransformation named = transformation_;
  named.name = name_;
  named.settings = settings_;
  return named.describe();
}

Optimizer sgd(SgdOptions o) {
  std::vector<GradientTransformation> links = coupled_decay(o.weight_decay, o.decay_mask);
  if (o.momentum != 0) links.push_back(trace(o.momentum, o.nesterov));
  return Optimizer(o.nesterov ? "sgd_nesterov" : "sgd", ending_with_rate(std::move(links), o.lr, o.schedule),
                   schedule_settings(o.schedule));
}

Optimizer adam(AdamOptions o) {
  std::vector<GradientTransformation> links = coupled_decay(o.weight_decay, o.decay_mask);
  links.push_back(scale_by_adam(o.beta1, o.beta2, o.eps));
  return Optimizer("adam", ending_with_rate(std::move(links), o.lr, o.schedule), schedule_settings(o.schedule));
}

Optimizer adamw(AdamOptions o) {
  std::vector<GradientTransformation> links{scale_by_adam(o.beta1, o.beta2, o.eps)};
  links.push_back(add_decayed_weights(o.weight_decay, o.decay_mask));
  return Optimizer("adamw", ending_with_rate(std::move(links), o.lr, o.schedule), schedule_settings(o.schedule));
}

Optimizer rmsprop(RmsPropOptions o) {
  std::vector<GradientTransformation> links = coupled_decay(o.weight_decay, o.decay_mask);
  links.push_back(scale_by_rms(o.alpha, o.eps));
  if (o.momentum != 0) links.push_back(trace(o.momentum));
  return Optimizer("rmsprop", ending_with_rate(std::move(links), o.lr, o.schedule), schedule_settings(o.schedule));
}

Optimizer adagrad(AdagradOptions o) {
  std::vector<GradientTransformation> links = coupled_decay(o.weight_decay, o.decay_mask);
  links.push_back(scale_by_rss(o.eps, o.initial_accumulator));
  return Optimizer("adagrad", ending_with_rate(std::move(links), o.lr, o.schedule), schedule_settings(o.schedule));
}

Optimizer lion(LionOptions o) {
  std::vector<GradientTransformation> links{scale_by_lion(o.beta1, o.beta2)};
  if (o.weight_decay != 0) links.push_back(add_decayed_weights(o.weight_decay, o.decay_mask));
  return Optimizer("lion", ending_with_rate(std::move(links), o.lr, o.schedule), schedule_settings(o.schedule));
}

}  // namespace fluxion::nn
