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

int64_t Model::param_count() const {
  int64_t n = 0;
  for (const ParamSpec& s : param_specs()) n += numel(s.shape);
  return n;
}

std::vector<Array> Model::init(uint64_t seed) const {
  std::vector<ParamSpec> specs = param_specs();
  if (specs.empty()) return {};
  // Drawn by the interpreter: the same numbers whatever backend trains the model, and no
  // native compilation for a program that runs once.
  auto draw = [&](const std::vector<Tensor>&) {
    Tensor root = random::key(seed);
    std::vector<Tensor> values;
    for (size_t i = 0; i < specs.size(); ++i)
      values.push_back(initial_value(specs[i], random::fold_in(root, static_cast<int32_t>(i))));
    return values;
  };
  return compile_flat(draw, {}, Backend::Interp).run({});
}

Tensor Model::operator()(std::span<const Tensor> params, const Tensor& x, std::source_location loc) const {
  std::vector<ParamSpec> specs = param_specs();
  if (params.size() != specs.size()) {
    fluxion::detail::fail("nn::Model", layer_->describe() + " takes " + std::to_string(specs.size()) + " parameters, got " +
                                  std::to_string(params.size()), &loc);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (params[i].shape() != specs[i].shape || !is_float(params[i].dtype())) {
      fluxion::detail::fail("nn::Model", "parameter " + std::to_string(i) + " '" + specs[i].name + "' is " +
                                    params[i].type().str() + ", expected a float tensor of shape " +
                                    shape_str(specs[i].shape), &loc);
    }
  }
  return layer_->forward(params, x);
}

std::string Model::summary() const {
  std::string out;
  auto add_layer = [&](const std::string& prefix, const Layer& l) {
    out += prefix + l.describe() + "\n";
    for (const ParamSpec& s : l.params()) out += "    " + s.name + " " + shape_str(s.shape) + " " + s.init.str() + "\n";
  };
  if (const auto* seq = dynamic_cast<const Sequential*>(layer_.get())) {
    out += "Sequential\n";
    for (size_t i = 0; i < seq->layers().size(); ++i) add_layer("  (" + std::to_string(i) + ") ", seq->layers()[i].layer());
  } else {
    add_layer("", *layer_);
  }
  out += "parameters: " + std::to_string(param_count()) + "\n";
  return out;
}

std::vector<ParamSpec> Sequential::params() const {
  std::vector<ParamSpec> out;
  for (size_t i = 0; i < layers_.size(); ++i) {
    for (ParamSpec s : layers_[i].param_specs()) {
      s.name = std::to_string(i) + "." + s.name;
      out.push_back(std::move(s));
    }
  }
  return out;
}

Tensor Sequential::forward(std::span<const Tensor> p, const Tensor& x) const {
  Tensor h = x;
  size_t used = 0;
  for (const Model& m : layers_) {
    size_t n = m.layer().params().size();
    h = m.layer().forward(p.subspan(used, n), h);
    used += n;
  }
  return h;
}

std::string Sequential::describe() const {
  std::string out = "Sequential(";
  for (size_t i = 0; i < layers_.size(); ++i) out += (i ? ", " : "") + layers_[i].layer().describe();
  return out + ")";
}

void expect_input(const std::string& layer, const Tensor& x, int64_t rank, int64_t axis, int64_t size, bool at_least) {
  if (!x.valid()) fluxion::detail::fail(layer, "the input is an empty Tensor");
  bool rank_ok = at_least ? x.rank() >= rank : x.rank() == rank;
  std::string want = (at_least ? "rank >= " : "rank ") + std::to_string(rank);
  if (size >= 0) want += " with dimension " + std::to_string(axis) + " = " + std::to_string(size);
  if (!is_float(x.dtype())) fluxion::detail::fail(layer, "input " + x.type().str() + ": expected a float input of " + want);
  if (!rank_ok || (size >= 0 && x.shape()[static_cast<size_t>(axis < 0 ? axis + x.rank() : axis)] != size))
    fluxion::detail::fail(layer, "input " + x.type().str() + ": expected " + want);
}

}  // namespace fluxion::nn
