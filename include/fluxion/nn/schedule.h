// Learning-rate schedules: a factor of the step count that multiplies the learning rate. A
// schedule is evaluated on the device inside the compiled training step, from a step counter
// held in the optimizer's state, so a schedule never recompiles or reads anything back; the base
// learning rate it multiplies stays a run-time hyperparameter (nn::Optimizer).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fluxion/ops.h"

namespace fluxion::nn {

class Schedule {
 public:
  enum class Kind {
    Constant,      // 1
    Step,          // gamma^floor(step / every)                                   (torch StepLR)
    Exponential,   // gamma^step                                                  (torch ExponentialLR)
    WarmupCosine,  // linear from `start` to 1 over `warmup` steps, then a half cosine from 1 to
                   // `final` at step `total`, `final` after it         (optax warmup_cosine_decay)
    Piecewise,     // factors[k] from boundaries[k-1] (inclusive) on; factors[0] before boundaries[0]
  };
  // A constant factor of 1.
  Schedule() = default;
  static Schedule step(int64_t every, double gamma);
  static Schedule exponential(double gamma);
  static Schedule warmup_cosine(int64_t warmup, int64_t total, double final_factor = 0, double start_factor = 0);
  // boundaries increasing; factors.size() == boundaries.size() + 1.
  static Schedule piecewise(std::vector<int64_t> boundaries, std::vector<double> factors);

  Kind kind() const { return kind_; }
  bool constant() const { return kind_ == Kind::Constant; }
  // The factor at `step` (an i32 scalar Tensor counting from 0) as a scalar of `dtype`, inside a trace.
  Tensor operator()(const Tensor& step, DType dtype) const;
  // "warmup_cosine(warmup=100, total=1000, final=0, start=0)".
  std::string describe() const;

 private:
  Kind kind_ = Kind::Constant;
  int64_t every_ = 1, warmup_ = 0, total_ = 1;
  double gamma_ = 1, final_ = 0, start_ = 0;
  std::vector<int64_t> boundaries_;
  std::vector<double> factors_;
};

}  // namespace fluxion::nn
