// The training loop shared by the Fashion-MNIST samples (mlp_train, lenet_train, rnn_train):
// loads the data, trains with a progress bar per epoch, evaluates on the test set after every
// epoch, writes the curves (CSV and SVG) and the checkpoint, and ends with the line
// "final test accuracy: 0.XXXX". Under mpirun it trains data-parallel, each rank on its shard
// of every batch of --batch-size examples; rank 0 evaluates, prints and writes the files.
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

struct EpochResult {
  double train_loss = 0;  // the mean of the epoch's step losses
  double seconds = 0;     // the training loop's time
};

// One epoch of training steps over `loader` (shuffled for `epoch`) with a progress bar. The
// step losses are read only when the bar is drawn and at the end: reading a Vulkan result
// copies it to the host. `ranks`: the job's ranks, each taking its shard of every batch (the
// bar counts the examples of all).
EpochResult train_epoch(const fluxion::nn::Trainer& trainer, fluxion::nn::TrainState& state,
                        fluxion::data::Loader& loader, int64_t epoch, int ranks = 1);

}  // namespace samples
