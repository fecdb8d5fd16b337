// Reduce-on-plateau: lowers a run-time hyperparameter (the learning rate) when a validation
// metric stops improving, as PyTorch's ReduceLROnPlateau (mode "min", relative threshold). It
// runs on the host, once per evaluation, and writes the optimizer state's hyperparameter: the
// compiled step is untouched.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/nn/optim.h"

namespace fluxion::nn {

class ReduceOnPlateau {
 public:
  struct Options {
    double factor = 0.1;      // the new value is old * factor ...
    double min_value = 0;     // ... but not below min_value
    int patience = 10;        // evaluations without improvement tolerated before lowering
    double threshold = 1e-4;  // an improvement is a metric below best * (1 - threshold)
    int cooldown = 0;         // evaluations after a reduction during which none is counted
    std::string hyperparameter = "lr";
  };
  ReduceOnPlateau() : ReduceOnPlateau(Options{}) {}
  explicit ReduceOnPlateau(Options options) : options_(std::move(options)) {}

  // Records one evaluation's metric (lower is better); returns whether it lowered the
  // hyperparameter in `opt_state` (Optimizer::init's layout).
  bool observe(double metric, const Optimizer& optimizer, std::vector<Array>& opt_state);
  double best() const { return best_; }
  int bad_evaluations() const { return bad_; }

 private:
  Options options_;
  double best_ = std::numeric_limits<double>::infinity();
  int bad_ = 0, cooldown_left_ = 0;
};

}  // namespace fluxion::nn
