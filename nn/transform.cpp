#include "fluxion/nn/transform.h"

#include <cstdio>
#include <set>

#include "fluxion/error.h"
#include "fluxion/ops.h"
#include "nn/number_text.h"

namespace fluxion::nn {

namespace {

using Tensors = std::vector<Tensor>;

// A hyperparameter (a scalar of the state's float dtype) in the dtype of `like`.
Tensor as(const Tensor& hyper, const Tensor& like) { return cast(hyper, like.dtype()); }

// One array per parameter, of its type, every element `value`.
std::vector<Array> filled_like_all(const std::vector<Array>& params, double value) {
  std::vector<Array> out;
  for (const Array& p : params) {
    size_t n = static_cast<size_t>(p.size());
    switch (p.dtype()) {
      case DType::f64: out.emplace_back(std::vector<double>(n, value), p.shape()); break;
      case DType::f16: out.emplace_back(std::vector<Half>(n, Half(value)), p.shape()); break;
      case DType::bf16: out.emplace_back(std::vector<BFloat16>(n, BFloat16(value)), p.shape()); break;
      default: out.emplace_back(std::vector<float>(n, static_cast<float>(value)), p.shape()); break;
    }
  }
  return out;
}

std::function<std::vector<std::string>(const std::vector<std::string>&)> per_param(std::vector<std::string> prefixes) {
  return [prefixes](const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const std::string& prefix : prefixes)
      for (const std::string& n : names) out.push_back(prefix + n);
    return out;
  };
}

// State: `count` tensors per parameter filled with `value`, stored moment by moment.
std::function<std::vector<Array>(const std::vector<Array>&)> moments(int count, double value = 0) {
  return [count, value](const std::vector<Array>& params) {
    std::vector<Array> out;
    for (int k = 0; k < count; ++k)
      for (Array& z : filled_like_all(params, value)) out.push_back(z);
    return out;
  };
}

// A transformation keeping one tensor per parameter (`prefix` + its name, starting at
// `initial`) and updating element by element: rule(u, state, hyper) -> {new u, new state},
// with the hyperparameters already in u's dtype.
using MomentRule = std::function<std::pair<Tensor, Tensor>(const Tensor& u, const Tensor& state, const Tensors& hyper)>;
GradientTransformation one_moment(std::string name, std::vector<Hyperparameter> hyperparameters, std::string prefix,
                                  double initial, MomentRule rule) {
  GradientTransformation t;
  t.name = std::move(name);
  t.hyperparameters = std::move(hyperparameters);
  t.init = moments(1, initial);
  t.state_names = per_param({std::move(prefix)});
  t.update = [rule = std::move(rule)](const TransformInputs& in) {
    Tensors out, state;
    for (size_t i = 0; i < in.updates.size(); ++i) {
      const Tensor& u = in.updates[i];
      Tensors hyper;
      for (const Tensor& h : in.hyper) hyper.push_back(as(h, u));
      auto [next, s] = rule(u, in.state[i], hyper);
      out.push_back(next);
      state.push_back(s);
    }
    return TransformResult{out, state};
  };
  return t;
}

}  // namespace

ParamMask matrices_only() {
  return [](const std::string&, const Shape& shape) { return shape.size() >= 2; };
}

std::string GradientTransformation::describe() const {
  // A chain lists its links, which show their own hyperparameters.
  if (name == "chain") return "chain(" + settings + ")";
  std::string s = name + "(";
  for (size_t i = 0; i < hyperparameters.size(); ++i)
    s += (i ? ", " : "") + hyperparameters[i].name + "=" + detail::number_text(hyperparameters[i].value);
  if (!settings.empty()) s += (hyperparameters.empty() ? "" : ", ") + settings;
  return s + ")";
}

GradientTransformation chain(std::vector<GradientTransformation> links) {
  GradientTransformation c;
  c.name = "chain";
  std::set<std::string> seen;
  for (const GradientTransformation& t : links) {
    for (const Hyperparameter& h : t.hyperparameters) {
      if (!seen.insert(h.name).second) {
        fluxion::detail::fail("nn::chain", "two transformations declare the hyperparameter '" + h.name +
                                               "'; each name must be unique within a chain");
      }
      c.hyperparameters.push_back(h);
    }
    c.settings += (c.settings.empty() ? "" : ", ") + t.describe();
  }
  c.init = [links](const std::vector<Array>& params) {
    std::vector<Array> out;
    for (const GradientTransformation& t : links) {
      if (!t.init) continue;
      for (Array& a : t.init(params)) out.push_back(a);
    }
    return out;
  };
  c.state_names = [links](const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const GradientTransformation& t : links) {
      if (!t.state_names) continue;
      for (std::string& n : t.state_names(names)) out.push_back(n);
    }
    return out;
  };
  c.update = [links](const TransformInputs& in) {
    Tensors updates = in.updates, state;
    size_t hyper_at = 0, state_at = 0;
    for (const GradientTransformation& t : links) {
      size_t h = t.hyperparameters.size(), n = t.state_names ? t.state_names(in.names).size() : 0;
      TransformResult r =
          t.update({updates, in.params, in.names, in.hyper.subspan(hyper_at, h), in.state.subspan(state_at, n)});
      updates = std::move(r.updates);
      state.insert(state.end(), r.state.begin(), r.state.end());
      hyper_at += h;
      state_at += n;
    }
    return TransformResult{updates, state};
  };
  return c;
}

GradientTransformation scale_by_learning_rate(double lr, Schedule schedule) {
  GradientTransformation t;
  t.name = "scale_by_learning_rate";
  t.hyperparameters = {{"lr", lr}};
  // The schedule's numbers follow the rate as hyperparameters ("lr.warmup"): data, not program.
  for (const ScheduleParameter& p : schedule.parameters()) t.hyperparameters.push_back({"lr." + p.name, p.value});
  if (!schedule.constant()) {
    t.settings = "schedule=" + schedule.structure();
    t.init = [](const std::vector<Array>&) { return std::vector<Array>{Array::scalar(int32_t{0})}; };
    t.state_names = [](const std::vector<std::string>&) { return std::vector<std::string>{"lr.step"}; };
  }
  t.update = [schedule](const TransformInputs& in) {
    Tensor rate = -in.hyper[0];
    Tensors state;
    if (!schedule.constant()) {
      rate = schedule.parameters().empty() ? rate * schedule(in.state[0], in.hyper[0].dtype())
                                           : rate * schedule(in.state[0], in.hyper.subspan(1));
      state.push_back(in.state[0] + 1.0);
    }
    Tensors out;
    for (const Tensor& u : in.updates) out.push_back(u * as(rate, u));
    return TransformResult{out, state};
  };
  return t;
}

GradientTransformation trace(double momentum, bool nesterov) {
  GradientTransformation t = one_moment("trace", {{"momentum", momentum}}, "momentum.", 0,
                                        [nesterov](const Tensor& u, const Tensor& v0, const Tensors& h) {
                                          Tensor v = v0 * h[0] + u;
                                          return std::make_pair(nesterov ? u + v * h[0] : v, v);
                                        });
  if (nesterov) t.settings = "nesterov";
  return t;
}

GradientTransformation add_decayed_weights(double weight_decay, ParamMask mask) {
  GradientTransformation t;
  t.name = "add_decayed_weights";
  t.hyperparameters = {{"weight_decay", weight_decay}};
  if (mask) t.settings = "masked";
  t.update = [mask](const TransformInputs& in) {
    Tensors out;
    for (size_t i = 0; i < in.updates.size(); ++i) {
      const Tensor& u = in.updates[i];
      bool decayed = !mask || mask(in.names[i], in.params[i].shape());
      out.push_back(decayed ? u + in.params[i] * as(in.hyper[0], u) : u);
    }
    return TransformResult{out, {}};
  };
  return t;
}

GradientTransformation scale_by_adam(double beta1, double beta2, double eps) {
  GradientTransformation t;
  t.name = "scale_by_adam";
  t.hyperparameters = {{"beta1", beta1}, {"beta2", beta2}, {"eps", eps}};
  // [step, m..., v...]
  t.init = [](const std::vector<Array>& params) {
    std::vector<Array> out{Array::scalar(int32_t{0})};
    for (Array& z : moments(2)(params)) out.push_back(z);
    return out;
  };
  t.state_names = [](const std::vector<std::string>& names) {
    std::vector<std::string> out{"adam.step"};
    for (std::string& n : per_param({"adam.m.", "adam.v."})(names)) out.push_back(n);
    return out;
  };
  t.update = [](const TransformInputs& in) {
    size_t n = in.updates.size();
    const Tensor &b1 = in.hyper[0], &b2 = in.hyper[1], &eps = in.hyper[2];
    Tensor step = in.state[0] + 1.0;
    // The bias corrections depend only on the step count: computed once per step, not per element.
    Tensor t_float = cast(step, b1.dtype());
    Tensor c1 = 1.0 - pow(b1, t_float), c2 = sqrt(1.0 - pow(b2, t_float));
    Tensors out, ms, vs;
    for (size_t i = 0; i < n; ++i) {
      const Tensor& u = in.updates[i];
      Tensor m = in.state[1 + i] * as(b1, u) + u * as(1.0 - b1, u);
      Tensor v = in.state[1 + n + i] * as(b2, u) + square(u) * as(1.0 - b2, u);
      out.push_back(m / as(c1, u) / (sqrt(v) / as(c2, u) + as(eps, u)));
      ms.push_back(m);
      vs.push_back(v);
    }
    Tensors state{step};
    state.insert(state.end(), ms.begin(), ms.end());
    state.insert(state.end(), vs.begin(), vs.end());
    return TransformResult{out, state};
  };
  return t;
}

GradientTransformation scale_by_rms(double alpha, double eps) {
  return one_moment("scale_by_rms", {{"alpha", alpha}, {"eps", eps}}, "rms.v.", 0,
                    [](const Tensor& u, const Tensor& v0, const Tensors& h) {
                      Tensor v = v0 * h[0] + square(u) * (1.0 - h[0]);
                      return std::make_pair(u / (sqrt(v) + h[1]), v);
                    });
}

GradientTransformation scale_by_rss(double eps, double initial) {
  GradientTransformation t = one_moment("scale_by_rss", {{"eps", eps}}, "adagrad.sum.", initial,
                                        [](const Tensor& u, const Tensor& s0, const Tensors& h) {
                                          Tensor s = s0 + square(u);
                                          return std::make_pair(u / (sqrt(s) + h[0]), s);
                                        });
  t.settings = "initial=" + detail::number_text(initial);
  return t;
}

GradientTransformation scale_by_lion(double beta1, double beta2) {
  return one_moment("scale_by_lion", {{"beta1", beta1}, {"beta2", beta2}}, "lion.m.", 0,
                    [](const Tensor& u, const Tensor& m, const Tensors& h) {
                      return std::make_pair(sign(m * h[0] + u * (1.0 - h[0])), m * h[1] + u * (1.0 - h[1]));
                    });
}

GradientTransformation clip_by_global_norm(double max_norm) {
  GradientTransformation t;
  t.name = "clip_by_global_norm";
  t.hyperparameters = {{"max_norm", max_norm}};
  t.update = [](const TransformInputs& in) {
    const Tensor& max_norm = in.hyper[0];
    Tensor squares = scalar(0, max_norm.dtype());
    for (const Tensor& u : in.updates) squares = squares + cast(sum(square(u)), max_norm.dtype());
    Tensor coef = minimum(max_norm / (sqrt(squares) + 1e-6), 1.0);
    Tensors out;
    for (const Tensor& u : in.updates) out.push_back(u * as(coef, u));
    return TransformResult{out, {}};
  };
  return t;
}

GradientTransformation clip_by_value(double limit) {
  GradientTransformation t;
  t.name = "clip_by_value";
  t.hyperparameters = {{"clip_value", limit}};
  t.update = [](const TransformInputs& in) {
    Tensors out;
    for (const Tensor& u : in.updates) {
      Tensor l = as(in.hyper[0], u);
      out.push_back(minimum(maximum(u, -l), l));
    }
    return TransformResult{out, {}};
  };
  return t;
}

}  // namespace fluxion::nn
