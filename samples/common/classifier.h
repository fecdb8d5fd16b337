// The training loop shared by the Fashion-MNIST samples (mlp_train, lenet_train, rnn_train):
// loads the data, trains with a progress bar per epoch, evaluates on the test set after every
// epoch, writes the curves (CSV and SVG) and the checkpoint, and ends with the line
// "final test accuracy: 0.XXXX".
#pragma once

#include <fluxion/nn.h>

#include <string>

#include "common/cli.h"

namespace samples {

// The optimizer the flags name; exits with a message for an unknown name.
fluxion::nn::Optimizer make_optimizer(const TrainingOptions& opt);

// Returns the process exit code (0, or 1 after printing a fluxion::Error).
int train_classifier(const std::string& program, const TrainingOptions& opt, const fluxion::nn::Model& model,
                     const fluxion::nn::Optimizer& optimizer);

// Loss-summing helper shared with char_rnn: reads the pending per-step losses (reading a
// Vulkan result copies it to the host, so the samples read them only when they print).
class LossMeter {
 public:
  void add(const fluxion::Array& loss) { pending_.push_back(loss); }
  double mean();  // over every loss added so far

 private:
  std::vector<fluxion::Array> pending_;
  double sum_ = 0;
  int64_t count_ = 0;
};

}  // namespace samples
