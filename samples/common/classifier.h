// The training loop shared by the samples. train_classifier, for the Fashion-MNIST samples
// (mlp_train, lenet_train, rnn_train): loads the data, trains with a progress bar per epoch,
// evaluates on the test set after every epoch, writes the curves (CSV and SVG) and the
// checkpoints, and ends with the line "final test accuracy: 0.XXXX". Under mpirun it trains
// data-parallel, each rank on its shard of every batch of --batch-size examples; rank 0
// evaluates, prints and writes the files. The pieces (optimizer, epoch, checkpoints) serve
// char_rnn too.
#pragma once

#include <fluxion/nn.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/cli.h"
#include "common/curves.h"

namespace samples {

// The learning-rate schedule --schedule names, for `steps_per_epoch` training steps an epoch
// and --epochs epochs (the exact factors are in the flag's help and docs/samples.md).
fluxion::nn::Schedule make_schedule(const TrainingOptions& opt, int64_t steps_per_epoch);
// The optimizer the flags name (--optimizer, --lr, --momentum, --weight-decay), with
// make_schedule's schedule and, for --clip > 0, clip_by_global_norm chained in front of it.
fluxion::nn::Optimizer make_optimizer(const TrainingOptions& opt, int64_t steps_per_epoch);

// Fashion-MNIST's split ("train", "test"); a missing file's error says where the files come from.
fluxion::data::Dataset load_fashion_mnist(const std::string& split);

// Trains `model` on Fashion-MNIST as the flags say; returns the exit status (0). Errors are
// thrown (the caller's main reports them).
int train_classifier(const std::string& program, const TrainingOptions& opt, const fluxion::nn::Model& model);

struct EpochResult {
  double train_loss = 0;  // the mean of the epoch's step losses (the finite ones, under loss scaling)
  double seconds = 0;     // the training loop's time
  int64_t skipped = 0;    // under loss scaling: steps skipped for gradients that were not finite
};

// ", loss scale S, N steps skipped" for a run that scales its loss (--precision f16), else "".
std::string loss_scale_text(const EpochResult& r, const fluxion::nn::TrainState& state);

// One epoch of training steps over `loader` (shuffled for `epoch`) with a progress bar. The
// step losses are read only when the bar is drawn and at the end: reading a Vulkan result
// copies it to the host. `ranks`: the job's ranks, each taking its shard of every batch (the
// bar counts the examples of all).
EpochResult train_epoch(const fluxion::nn::Trainer& trainer, fluxion::nn::TrainState& state,
                        fluxion::data::Loader& loader, int64_t epoch, int ranks = 1);

// The run's checkpoints (--checkpoint, --resume, --load, --save, --stop-after). After every
// epoch the training state is written to the checkpoint with, in the safetensors metadata, the
// epochs done, what fixes the data order (the seed, the number of training examples and the
// batch size: data::Loader shuffles epoch e by permutation(n, seed, e)) and the best validation
// score so far; the epoch with the best score is also written to the best checkpoint. --resume
// reads one back and the run continues with the next epoch: the same flags give bitwise the
// state of the run that was not interrupted.
class RunCheckpoints {
 public:
  struct Metric {
    std::string name;  // "test accuracy"
    bool higher_is_better = true;
  };
  // `writer`: whether this process writes files (rank 0 of a job).
  RunCheckpoints(std::string program, const TrainingOptions& opt, fluxion::nn::Model model,
                 fluxion::nn::Optimizer optimizer, int64_t examples, Metric metric, bool writer);
  // Applies --load or --resume to `state` (a fresh one from Trainer::init) and prints what it
  // did; returns the first epoch to train. Raises an error when --resume's checkpoint was written
  // with another data order, or holds no epoch.
  int64_t start(fluxion::nn::TrainState& state);
  // The last epoch this process trains (--stop-after, else --epochs).
  int64_t last_epoch() const;
  // The curves to continue: the CSV's rows up to the resumed epoch, none for a fresh run.
  std::vector<EpochRecord> resumed_curves(const std::string& csv) const;
  // After `epoch`: records its validation score, writes the checkpoint and, when the score is
  // the best so far, the best checkpoint.
  void end_epoch(int64_t epoch, double score, const fluxion::nn::TrainState& state);
  // At the end of the process: --save, and the line saying how to resume after --stop-after.
  void finish(const fluxion::nn::TrainState& state);

 private:
  void write(const std::vector<std::string>& paths, const fluxion::nn::TrainState& state) const;

  std::string program_;
  const TrainingOptions& opt_;
  fluxion::nn::Model model_;
  fluxion::nn::Optimizer optimizer_;
  int64_t examples_;
  Metric metric_;
  bool writer_;
  int64_t epoch_ = 0;  // epochs done
  int64_t best_epoch_ = 0;
  double best_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace samples
