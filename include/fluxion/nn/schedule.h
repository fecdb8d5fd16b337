// Learning-rate schedules: a factor of the step count that multiplies the learning rate. A
// schedule is evaluated on the device inside the compiled training step, from a step counter
// held in the optimizer's state, so a schedule never recompiles or reads anything back. Its
// numbers (warm-up and total steps, factors, boundaries) are run-time hyperparameters like the
// learning rate it multiplies (nn::Optimizer, "lr.warmup", "lr.total", ...): a run with more
// epochs changes data, not the compiled program. Schedules join into piecewise ones
// (join_schedules), and a schedule can be any function of the step the user writes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fluxion/ops.h"

namespace fluxion::nn {

// A schedule's number, by name ("warmup", "0.gamma", "boundary0") and value.
struct ScheduleParameter {
  std::string name;
  double value = 0;
};

class Schedule {
 public:
  enum class Kind {
    Constant,      // 1
    Step,          // gamma^floor(step / every)                                   (torch StepLR)
    Exponential,   // gamma^step                                                  (torch ExponentialLR)
    WarmupCosine,  // linear from `start` to 1 over `warmup` steps, then a half cosine from 1 to
                   // `final` at step `total`, `final` after it         (optax warmup_cosine_decay)
    Piecewise,     // factors[k] from boundaries[k-1] (inclusive) on; factors[0] before boundaries[0]
    Join,          // parts[k] from boundaries[k-1] on, counting its own steps from there
    Function,      // the user's function of the step                             (torch LambdaLR)
  };
  // The function of a Function schedule: the factor at `step`, a scalar of the learning rate's
  // dtype counting from 0, built from Tensor operations (traced into the training step).
  using StepFunction = std::function<Tensor(const Tensor& step)>;

  // A constant factor of 1.
  Schedule() = default;
  static Schedule step(int64_t every, double gamma);
  static Schedule exponential(double gamma);
  static Schedule warmup_cosine(int64_t warmup, int64_t total, double final_factor = 0, double start_factor = 0);
  // boundaries increasing; factors.size() == boundaries.size() + 1.
  static Schedule piecewise(std::vector<int64_t> boundaries, std::vector<double> factors);
  // `name` says what the function is in describe(). Its constants are part of the program; a
  // number that should change without recompiling belongs in one of the kinds above.
  static Schedule function(std::string name, StepFunction f);
  // parts[0] before boundaries[0], parts[k] from boundaries[k-1] on, where it sees the step
  // minus boundaries[k-1] (optax's join_schedules). boundaries increasing and positive;
  // parts.size() == boundaries.size() + 1.
  static Schedule join(std::vector<Schedule> parts, std::vector<int64_t> boundaries);

  Kind kind() const { return kind_; }
  bool constant() const { return kind_ == Kind::Constant; }
  // The numbers of the schedule in the order operator() takes them; a joined schedule's are its
  // parts' ("0.warmup", "1.total", ...) and then its boundaries ("boundary0", ...).
  std::vector<ScheduleParameter> parameters() const;
  // The factor at `step` (an i32 scalar Tensor counting from 0) inside a trace, with the
  // parameters as scalar Tensors of the factor's dtype (parameters() order).
  Tensor operator()(const Tensor& step, std::span<const Tensor> parameters) const;
  // The same with the parameters' own values as constants of `dtype`.
  Tensor operator()(const Tensor& step, DType dtype) const;
  // "warmup_cosine(warmup=100, total=1000, final=0, start=0)".
  std::string describe() const;
  // The shape of the schedule without its numbers: "warmup_cosine", "join(function(ramp), warmup_cosine)".
  std::string structure() const;

 private:
  // The factor at a step given as a float scalar, reading parameters from `next` on.
  Tensor at(const Tensor& step, std::span<const Tensor> parameters, size_t& next) const;

  Kind kind_ = Kind::Constant;
  int64_t every_ = 1, warmup_ = 0, total_ = 1;
  double gamma_ = 1, final_ = 0, start_ = 0;
  std::vector<int64_t> boundaries_;
  std::vector<double> factors_;
  std::vector<Schedule> parts_;
  std::string name_;
  std::shared_ptr<const StepFunction> function_;
};

// Schedule::join.
Schedule join_schedules(std::vector<Schedule> parts, std::vector<int64_t> boundaries);

}  // namespace fluxion::nn
