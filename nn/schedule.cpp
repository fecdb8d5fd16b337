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

Schedule Schedule::piecewise(std::vector<int64_t> boundaries, std::vector<double> factors) {
  bool increasing = true;
  for (size_t k = 1; k < boundaries.size(); ++k) increasing = increasing && boundaries[k - 1] < boundaries[k];
  if (factors.size() != boundaries.size() + 1 || !increasing) {
    fluxion::detail::fail("nn::Schedule::piecewise", std::to_string(boundaries.size()) + " boundaries and " +
                                                         std::to_string(factors.size()) +
                                                         " factors: expected increasing boundaries and one factor "
                                                         "more than boundaries");
  }
  Schedule s;
  s.kind_ = Kind::Piecewise;
  s.boundaries_ = std::move(boundaries);
  s.factors_ = std::move(factors);
  return s;
}

Tensor Schedule::operator()(const Tensor& step, DType dtype) const {
  Tensor s = cast(step, dtype);
  switch (kind_) {
    case Kind::Constant: return scalar(1, dtype);
    case Kind::Step: return pow(gamma_, floor(s / static_cast<double>(every_)));
    case Kind::Exponential: return pow(gamma_, s);
    case Kind::WarmupCosine: {
      Tensor warm = start_ + s * ((1 - start_) / static_cast<double>(std::max<int64_t>(warmup_, 1)));
      Tensor t = minimum(maximum((s - static_cast<double>(warmup_)) / static_cast<double>(total_ - warmup_), 0.0), 1.0);
      Tensor decay = final_ + (1 - final_) * 0.5 * (1 + cos(t * std::numbers::pi));
      return where(lt(step, scalar(static_cast<double>(warmup_), DType::i32)), warm, decay);
    }
    case Kind::Piecewise: {
      // Selected, not summed: each piece's factor is exactly the one given.
      Tensor f = scalar(factors_[0], dtype);
      for (size_t k = 0; k < boundaries_.size(); ++k)
        f = where(ge(step, scalar(static_cast<double>(boundaries_[k]), DType::i32)), factors_[k + 1], f);
      return f;
    }
  }
  return scalar(1, dtype);
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
  }
  return "constant";
}

}  // namespace fluxion::nn
