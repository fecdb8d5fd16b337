#include "fluxion/nn/layer.h"

#include <cmath>
#include <cstdio>

#include "fluxion/error.h"
#include "fluxion/jit.h"
#include "fluxion/ops.h"

namespace fluxion::nn {

namespace {

// One parameter's initial values, traced: `key` is this parameter's own random key.
Tensor initial_value(const ParamSpec& spec, const Tensor& key) {
  const Initializer& in = spec.init;
  Fans fans = fans_of(spec.shape);
  if (in.fan_in > 0) fans.in = in.fan_in;
  double fan_in = static_cast<double>(fans.in), fan_sum = static_cast<double>(fans.in + fans.out);
  auto uniform = [&](double bound) { return random::uniform(key, spec.shape, f32, -bound, bound); };
  auto normal = [&](double mean, double stddev) { return random::normal(key, spec.shape, f32, mean, stddev); };
  switch (in.kind) {
    case Initializer::Kind::Constant: return full(spec.shape, in.a);
    case Initializer::Kind::Uniform: return random::uniform(key, spec.shape, f32, in.a, in.b);
    case Initializer::Kind::Normal: return normal(in.a, in.b);
    case Initializer::Kind::GlorotUniform: return uniform(std::sqrt(6.0 / fan_sum));
    case Initializer::Kind::GlorotNormal: return normal(0, std::sqrt(2.0 / fan_sum));
    case Initializer::Kind::HeUniform: return uniform(std::sqrt(6.0 / fan_in));
    case Initializer::Kind::HeNormal: return normal(0, std::sqrt(2.0 / fan_in));
    case Initializer::Kind::FanInUniform: return uniform(1.0 / std::sqrt(fan_in));
  }
  fluxion::detail::fail("nn::init", "unknown initializer kind");
}

}  // namespace

Model::Model(std::shared_ptr<const Layer> layer) : layer_(std::move(layer)) {
  if (!layer_) fluxion::detail::fail("nn::Model", "null layer");
}

std::vector<std::string> Model::param_names() const {
  std::vector<std::string> names;
  for (const ParamSpec& s : param_specs()) names.push_back(s.name);
  return names;
}

std::vector<std::pair<std::string, ParamSpec>> Model::named_parameters() const {
  std::vector<std::pair<std::string, ParamSpec>> out;
  for (ParamSpec& s : param_specs()) out.emplace_back(s.name, std::move(s));
  return out;
}

template <class T>
Named<T>::Named(const Model& model, std::vector<T>& values) : names_(model.param_names()), values_(&values) {
  if (values.size() != names_.size()) {
    fluxion::detail::fail("nn::Named", model.layer().describe() + " has " + std::to_string(names_.size()) +
                                           " parameters, the list " + std::to_string(values.size()));
  }
}

template <class T>
T& Named<T>::operator[](const std::string& name) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return (*values_)[i];
  }
  std::string known;
  for (const std::string& n : names_) known += (known.empty() ? "" : ", ") + n;
  fluxion::detail::fail("nn::Named", "no parameter '" + name + "'; the model has: " + known);
}

template <class T>
std::vector<T> Named<T>::with_prefix(const std::string& prefix) const {
  std::vector<T> out;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i].rfind(prefix, 0) == 0) out.push_back((*values_)[i]);
  }
  return out;
}

template class Named<Array>;
template class Named<Tensor>;

int64_t Model::param_count() const {
  int64_t n = 0;
  for (const ParamSpec& s : param_specs()) n += numel(s.shape);
  return n;
}

namespace {

// Each spec's initial values, drawn by the interpreter: the same numbers whatever backend
// trains the model, and no native compilation for a program that runs once.
std::vector<Array> initial_values(const std::vector<ParamSpec>& specs, uint64_t seed, DType dtype, const char* what) {
  if (!is_float(dtype))
    fluxion::detail::fail(what, std::string("dtype must be a float dtype, got ") + dtype_name(dtype));
  if (specs.empty()) return {};
  auto draw = [&](const std::vector<Tensor>&) {
    Tensor root = random::key(seed);
    std::vector<Tensor> values;
    for (size_t i = 0; i < specs.size(); ++i) {
      Tensor v = initial_value(specs[i], random::fold_in(root, static_cast<int32_t>(i)));
      values.push_back(v.dtype() == dtype ? v : cast(v, dtype));
    }
    return values;
  };
  return compile_flat(draw, {}, Backend::Interp).run({});
}

// Error unless `given` has one Tensor per spec, each with its spec's shape and a float (or, for
// state, the spec's kind of) dtype.
void check_against(const std::string& layer, const char* what, std::span<const Tensor> given,
                   const std::vector<ParamSpec>& specs, const std::source_location& loc) {
  if (given.size() != specs.size()) {
    fluxion::detail::fail(
        "nn::Model",
        layer + " takes " + std::to_string(specs.size()) + " " + what + " tensors, got " + std::to_string(given.size()),
        &loc);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (given[i].shape() != specs[i].shape || !is_float(given[i].dtype())) {
      fluxion::detail::fail("nn::Model",
                            std::string(what) + " " + std::to_string(i) + " '" + specs[i].name + "' is " +
                                given[i].type().str() + ", expected a float tensor of shape " +
                                shape_str(specs[i].shape),
                            &loc);
    }
  }
}

}  // namespace

std::vector<Array> Model::init(uint64_t seed, DType dtype) const {
  return initial_values(param_specs(), seed, dtype, "nn::Model::init");
}

std::vector<std::string> Model::state_names() const {
  std::vector<std::string> names;
  for (const ParamSpec& s : state_specs()) names.push_back(s.name);
  return names;
}

std::vector<Array> Model::init_state(DType dtype) const {
  return initial_values(state_specs(), 0, dtype, "nn::Model::init_state");
}

Tensor Model::operator()(std::span<const Tensor> params, const Tensor& x, std::source_location loc) const {
  fluxion::detail::CallSite site(loc, /*covers=*/true);  // errors of the layers' ops name the caller's line
  check_against(layer_->describe(), "parameter", params, param_specs(), loc);
  if (!state_specs().empty()) {
    fluxion::detail::fail("nn::Model",
                          layer_->describe() + " has state (" + state_names()[0] + ", ...): call Model::apply with it",
                          &loc);
  }
  Context ctx;
  return layer_->apply(params, x, ctx);
}

Applied Model::apply(std::span<const Tensor> params, std::span<const Tensor> state, const Tensor& x,
                     const ApplyOptions& options, std::source_location loc) const {
  fluxion::detail::CallSite site(loc, /*covers=*/true);  // errors of the layers' ops name the caller's line
  check_against(layer_->describe(), "parameter", params, param_specs(), loc);
  check_against(layer_->describe(), "state", state, state_specs(), loc);
  Context ctx{options.training, options.key, state, {}};
  Tensor out = layer_->apply(params, x, ctx);
  if (ctx.new_state.empty()) return {out, std::vector<Tensor>(state.begin(), state.end())};
  return {out, ctx.new_state};
}

std::string Model::summary() const {
  std::string out;
  auto add_layer = [&](const std::string& prefix, const Layer& l) {
    out += prefix + l.describe() + "\n";
    for (const ParamSpec& s : l.params()) out += "    " + s.name + " " + shape_str(s.shape) + " " + s.init.str() + "\n";
  };
  if (const auto* seq = dynamic_cast<const Sequential*>(layer_.get())) {
    out += "Sequential\n";
    for (size_t i = 0; i < seq->layers().size(); ++i)
      add_layer("  (" + std::to_string(i) + ") ", seq->layers()[i].layer());
  } else {
    add_layer("", *layer_);
  }
  out += "parameters: " + std::to_string(param_count()) + "\n";
  return out;
}

namespace {

// Every layer's specs (params() or state()), each name prefixed with the layer's index.
std::vector<ParamSpec> indexed_specs(const std::vector<Model>& layers, std::vector<ParamSpec> (Layer::*specs)() const) {
  std::vector<ParamSpec> out;
  for (size_t i = 0; i < layers.size(); ++i) {
    for (ParamSpec s : (layers[i].layer().*specs)()) {
      s.name = std::to_string(i) + "." + s.name;
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace

std::vector<ParamSpec> Sequential::params() const { return indexed_specs(layers_, &Layer::params); }

std::vector<ParamSpec> Sequential::state() const { return indexed_specs(layers_, &Layer::state); }

Tensor Sequential::apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const {
  Tensor h = x;
  size_t params_used = 0, state_used = 0;
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& layer = layers_[i].layer();
    size_t n = layer.params().size(), k = layer.state().size();
    Context inner{ctx.training,
                  ctx.key.valid() ? random::fold_in(ctx.key, static_cast<int32_t>(i)) : Tensor(),
                  ctx.state.subspan(state_used, k),
                  {}};
    h = layer.apply(p.subspan(params_used, n), h, inner);
    const std::vector<Tensor>& updated = inner.new_state;
    if (updated.empty()) ctx.new_state.insert(ctx.new_state.end(), inner.state.begin(), inner.state.end());
    else ctx.new_state.insert(ctx.new_state.end(), updated.begin(), updated.end());
    params_used += n;
    state_used += k;
  }
  return h;
}

std::string Sequential::describe() const {
  std::string out = "Sequential(";
  for (size_t i = 0; i < layers_.size(); ++i) out += (i ? ", " : "") + layers_[i].layer().describe();
  return out + ")";
}

const Tensor& Context::require_key(const std::string& layer) const {
  if (!key.valid()) {
    fluxion::detail::fail(layer,
                          "needs a random key in training mode: pass ApplyOptions::key (nn::Trainer "
                          "derives one per step)");
  }
  return key;
}

Tensor Layer::forward(std::span<const Tensor> p, const Tensor& x) const {
  // A layer that overrides neither would recurse between the defaults.
  thread_local const Layer* in_default = nullptr;
  if (in_default == this) fluxion::detail::fail(describe(), "implements neither forward() nor apply()");
  if (!state().empty()) fluxion::detail::fail(describe(), "has state: call it through Model::apply");
  struct Restore {
    const Layer* previous;
    ~Restore() { in_default = previous; }
  } restore{in_default};
  in_default = this;
  Context ctx;
  return apply(p, x, ctx);
}

Tensor Layer::apply(std::span<const Tensor> p, const Tensor& x, Context&) const { return forward(p, x); }

void expect_input(const std::string& layer, const Tensor& x, int64_t rank, int64_t axis, int64_t size, bool at_least) {
  if (!x.valid()) fluxion::detail::fail(layer, "the input is an empty Tensor");
  bool rank_ok = at_least ? x.rank() >= rank : x.rank() == rank;
  std::string want = (at_least ? "rank >= " : "rank ") + std::to_string(rank);
  if (size >= 0) want += " with dimension " + std::to_string(axis) + " = " + std::to_string(size);
  if (!is_float(x.dtype()))
    fluxion::detail::fail(layer, "input " + x.type().str() + ": expected a float input of " + want);
  if (!rank_ok || (size >= 0 && x.shape()[static_cast<size_t>(axis < 0 ? axis + x.rank() : axis)] != size))
    fluxion::detail::fail(layer, "input " + x.type().str() + ": expected " + want);
}

}  // namespace fluxion::nn
