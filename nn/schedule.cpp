#include "fluxion/nn/schedule.h"

#include <cmath>
#include <cstdio>
#include <numbers>

#include "fluxion/error.h"
#include "nn/number_text.h"

namespace fluxion::nn {

Schedule Schedule::step(int64_t every, double gamma) {
  if (every < 1) fluxion::detail::fail("nn::Schedule::step", "every = " + std::to_string(every) + ": expected >= 1");
  Schedule s;
  s.kind_ = Kind::Step;
  s.every_ = every;
  s.gamma_ = gamma;
  return s;
}

Schedule Schedule::exponential(double gamma) {
  Schedule s;
  s.kind_ = Kind::Exponential;
  s.gamma_ = gamma;
  return s;
}

Schedule Schedule::warmup_cosine(int64_t warmup, int64_t total, double final_factor, double start_factor) {
  if (warmup < 0 || total <= warmup) {
    fluxion::detail::fail("nn::Schedule::warmup_cosine", "warmup = " + std::to_string(warmup) + ", total = " +
                                                             std::to_string(total) + ": expected 0 <= warmup < total");
  }
  Schedule s;
  s.kind_ = Kind::WarmupCosine;
  s.warmup_ = warmup;
  s.total_ = total;
  s.final_ = final_factor;
  s.start_ = start_factor;
  return s;
}

namespace {

// Raises Error unless `pieces` is one more than the boundaries and they increase (from 1 on,
// when `positive`).
void check_pieces(const char* op, size_t pieces, const char* what, const std::vector<int64_t>& boundaries,
                  bool positive) {
  bool increasing = !positive || boundaries.empty() || boundaries[0] > 0;
  for (size_t k = 1; k < boundaries.size(); ++k) increasing = increasing && boundaries[k - 1] < boundaries[k];
  if (pieces != boundaries.size() + 1 || !increasing) {
    fluxion::detail::fail(op, std::to_string(pieces) + " " + what + "s and " + std::to_string(boundaries.size()) +
                                  " boundaries: expected " + (positive ? "positive " : "") +
                                  "increasing boundaries and one " + what + " more than boundaries");
  }
}

}  // namespace

Schedule Schedule::piecewise(std::vector<int64_t> boundaries, std::vector<double> factors) {
  check_pieces("nn::Schedule::piecewise", factors.size(), "factor", boundaries, false);
  Schedule s;
  s.kind_ = Kind::Piecewise;
  s.boundaries_ = std::move(boundaries);
  s.factors_ = std::move(factors);
  return s;
}

Schedule Schedule::function(std::string name, StepFunction f) {
  if (!f) fluxion::detail::fail("nn::Schedule::function", "'" + name + "' has no function");
  Schedule s;
  s.kind_ = Kind::Function;
  s.name_ = std::move(name);
  s.function_ = std::make_shared<const StepFunction>(std::move(f));
  return s;
}

Schedule Schedule::join(std::vector<Schedule> parts, std::vector<int64_t> boundaries) {
  check_pieces("nn::join_schedules", parts.size(), "schedule", boundaries, true);
  Schedule s;
  s.kind_ = Kind::Join;
  s.parts_ = std::move(parts);
  s.boundaries_ = std::move(boundaries);
  return s;
}

Schedule join_schedules(std::vector<Schedule> parts, std::vector<int64_t> boundaries) {
  return Schedule::join(std::move(parts), std::move(boundaries));
}

std::vector<ScheduleParameter> Schedule::parameters() const {
  auto count = [](int64_t v) { return static_cast<double>(v); };
  switch (kind_) {
    case Kind::Constant:
    case Kind::Function: return {};
    case Kind::Step: return {{"every", count(every_)}, {"gamma", gamma_}};
    case Kind::Exponential: return {{"gamma", gamma_}};
    case Kind::WarmupCosine:
      return {{"warmup", count(warmup_)}, {"total", count(total_)}, {"final", final_}, {"start", start_}};
    case Kind::Piecewise: {
      std::vector<ScheduleParameter> out;
      for (size_t k = 0; k < boundaries_.size(); ++k)
        out.push_back({"boundary" + std::to_string(k), count(boundaries_[k])});
      for (size_t k = 0; k < factors_.size(); ++k) out.push_back({"factor" + std::to_string(k), factors_[k]});
      return out;
    }
    case Kind::Join: {
      std::vector<ScheduleParameter> out;
      for (size_t i = 0; i < parts_.size(); ++i)
        for (ScheduleParameter& p : parts_[i].parameters()) out.push_back({std::to_string(i) + "." + p.name, p.value});
      for (size_t k = 0; k < boundaries_.size(); ++k)
        out.push_back({"boundary" + std::to_string(k), count(boundaries_[k])});
      return out;
    }
  }
  return {};
}

Tensor Schedule::operator()(const Tensor& step, std::span<const Tensor> parameters) const {
  size_t expected = this->parameters().size();
  if (parameters.size() != expected) {
    fluxion::detail::fail("nn::Schedule", describe() + " takes " + std::to_string(expected) + " parameters, got " +
                                              std::to_string(parameters.size()));
  }
  DType dtype = parameters.empty() ? DType::f32 : parameters[0].dtype();
  size_t next = 0;
  return at(cast(step, dtype), parameters, next);
}

Tensor Schedule::operator()(const Tensor& step, DType dtype) const {
  std::vector<Tensor> values;
  for (const ScheduleParameter& p : parameters()) values.push_back(scalar(p.value, dtype));
  if (values.empty()) {
    size_t next = 0;
    return at(cast(step, dtype), {}, next);
  }
  return (*this)(step, values);
}

// Comparisons of the step with boundaries are of floats: exact while steps stay below 2^24 in
// f32, far past any schedule's length.
Tensor Schedule::at(const Tensor& s, std::span<const Tensor> p, size_t& next) const {
  auto take = [&] { return p[next++]; };
  switch (kind_) {
    case Kind::Constant: return scalar(1, s.dtype());
    case Kind::Function: {
      Tensor f = (*function_)(s);
      if (!f.shape().empty() || !is_float(f.dtype())) {
        fluxion::detail::fail("nn::Schedule::function",
                              "'" + name_ + "' returned " + f.type().str() + ", expected a float scalar");
      }
      return cast(f, s.dtype());
    }
    case Kind::Step: {
      Tensor every = take(), gamma = take();
      return pow(gamma, floor(s / every));
    }
    case Kind::Exponential: return pow(take(), s);
    case Kind::WarmupCosine: {
      Tensor warmup = take(), total = take(), final_factor = take(), start = take();
      Tensor warm = start + s * ((1.0 - start) / maximum(warmup, 1.0));
      Tensor t = minimum(maximum((s - warmup) / (total - warmup), 0.0), 1.0);
      Tensor decay = final_factor + (1.0 - final_factor) * 0.5 * (1.0 + cos(t * std::numbers::pi));
      return where(lt(s, warmup), warm, decay);
    }
    case Kind::Piecewise: {
      // Selected, not summed: each piece's factor is exactly the one given.
      std::vector<Tensor> bounds;
      for (size_t k = 0; k < boundaries_.size(); ++k) bounds.push_back(take());
      Tensor f = take();
      for (size_t k = 0; k < bounds.size(); ++k) f = where(ge(s, bounds[k]), take(), f);
      return f;
    }
    case Kind::Join: {
      std::vector<Tensor> bounds;
      size_t parts_at = next;
      for (const Schedule& part : parts_) next += part.parameters().size();
      for (size_t k = 0; k < boundaries_.size(); ++k) bounds.push_back(take());
      size_t after = next;
      next = parts_at;
      Tensor f = parts_[0].at(s, p, next);
      for (size_t k = 0; k < bounds.size(); ++k)
        f = where(ge(s, bounds[k]), parts_[k + 1].at(s - bounds[k], p, next), f);
      next = after;
      return f;
    }
  }
  return scalar(1, s.dtype());
}

std::string Schedule::describe() const {
  switch (kind_) {
    case Kind::Constant: return "constant";
    case Kind::Step: return "step(every=" + std::to_string(every_) + ", gamma=" + detail::number_text(gamma_) + ")";
    case Kind::Exponential: return "exponential(gamma=" + detail::number_text(gamma_) + ")";
    case Kind::WarmupCosine:
      return "warmup_cosine(warmup=" + std::to_string(warmup_) + ", total=" + std::to_string(total_) +
             ", final=" + detail::number_text(final_) + ", start=" + detail::number_text(start_) + ")";
    case Kind::Piecewise: {
      std::string s = "piecewise(";
      for (size_t k = 0; k < factors_.size(); ++k) {
        if (k) s += ", from " + std::to_string(boundaries_[k - 1]) + ": ";
        s += detail::number_text(factors_[k]);
      }
      return s + ")";
    }
    case Kind::Join: {
      std::string s = "join(";
      for (size_t k = 0; k < parts_.size(); ++k) {
        if (k) s += ", from " + std::to_string(boundaries_[k - 1]) + ": ";
        s += parts_[k].describe();
      }
      return s + ")";
    }
    case Kind::Function: return "function(" + name_ + ")";
  }
  return "constant";
}

std::string Schedule::structure() const {
  switch (kind_) {
    case Kind::Constant: return "constant";
    case Kind::Step: return "step";
    case Kind::Exponential: return "exponential";
    case Kind::WarmupCosine: return "warmup_cosine";
    case Kind::Piecewise: return "piecewise";
    case Kind::Join: {
      std::string s = "join(";
      for (size_t k = 0; k < parts_.size(); ++k) s += (k ? ", " : "") + parts_[k].structure();
      return s + ")";
    }
    case Kind::Function: return "function(" + name_ + ")";
  }
  return "constant";
}

}  // namespace fluxion::nn
