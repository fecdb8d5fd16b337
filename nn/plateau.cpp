#include "fluxion/nn/plateau.h"

#include <algorithm>

namespace fluxion::nn {

bool ReduceOnPlateau::observe(double metric, const Optimizer& optimizer, std::vector<Array>& opt_state) {
  if (metric < best_ * (1 - options_.threshold)) {
    best_ = metric;
    bad_ = 0;
  } else {
    ++bad_;
  }
  if (cooldown_left_ > 0) {
    --cooldown_left_;
    bad_ = 0;
  }
  if (bad_ <= options_.patience) return false;
  bad_ = 0;
  cooldown_left_ = options_.cooldown;
  double old = optimizer.hyperparameter(opt_state, options_.hyperparameter);
  double lowered = std::max(old * options_.factor, options_.min_value);
  // PyTorch's eps: a change too small to matter is not made.
  if (old - lowered <= 1e-8) return false;
  optimizer.set_hyperparameter(opt_state, options_.hyperparameter, lowered);
  return true;
}

}  // namespace fluxion::nn
