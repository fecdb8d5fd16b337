// Training checkpoints: everything a TrainState holds, in one safetensors file. Parameters and
// model state are stored under their own names ("0.weight", "1.running_mean", as a torch
// state_dict's parameters and buffers), optimizer state (hyperparameters included) under
// "optimizer." + its name, the step count and the random key as "trainer.step" and
// "trainer.key" (and a loss-scaled run's scale as "trainer.loss_scale",
// "trainer.loss_scale_good_steps" and "trainer.skipped_steps"); metadata records the model
// summary and the optimizer. A run resumed from a checkpoint continues exactly as the
// uninterrupted run would have.
//
// load_model and load_parameters also read files written elsewhere (a torch state_dict saved
// with safetensors): F16 and BF16 tensors are widened exactly into f32 or f64 parameters, names can be
// mapped by prefix, and in non-strict mode what does not match is reported instead of fatal.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fluxion/nn/layer.h"
#include "fluxion/nn/optim.h"
#include "fluxion/nn/trainer.h"

namespace fluxion::nn {

// Written atomically (see save_safetensors).
void save_checkpoint(const std::string& path, const Model& model, const Optimizer& optimizer, const TrainState& state);
// Replaces everything in `state` with the file's. Every name, shape and dtype
// is checked first: on any mismatch (missing or unexpected names, other shapes or dtypes)
// raises Error listing them, and `state` is left unchanged.
void load_checkpoint(const std::string& path, const Model& model, const Optimizer& optimizer, TrainState& state);

// How load_model and load_parameters match a file to a model.
struct LoadOptions {
  // Strict: any missing, unexpected or mismatched (other shape or dtype) tensor is an Error
  // listing them all. Not strict: they are reported (LoadReport), missing and mismatched ones
  // keep fresh values, and unexpected ones are ignored.
  bool strict = true;
  // A file name starting with `first` is read as starting with `second` instead: {"model.", ""}
  // drops a prefix, {"encoder.layers.0.", "1."} moves a block. The first pair that matches
  // applies; other names are read as they are. Two file names read as one name are an Error.
  std::vector<std::pair<std::string, std::string>> rename_prefixes = {};
  // Fresh values, in non-strict mode, of the parameters that are missing or mismatched:
  // model.init(seed)'s. (Missing model state takes model.init_state()'s.)
  uint64_t seed = 0;
};

// What a load found, filled in both modes (in strict mode before the Error).
struct LoadReport {
  std::vector<std::string> missing;     // the model's names that the file does not hold
  std::vector<std::string> unexpected;  // the file's names (as written there) the model lacks
  // The tensors of another shape or dtype: "'0.weight' is f32[3,4], expected f32[5,4]", with
  // " (in the file '<name>')" after the model's name when a prefix was renamed.
  std::vector<std::string> mismatched;
};

// The parameters (param_specs() order) and the model state (state_specs() order: batch norm's
// running statistics) of a model, as a torch state_dict holds both.
struct LoadedModel {
  std::vector<Array> params;
  std::vector<Array> state;
};

// The parameters and the model state. A checkpoint's training state (optimizer.*,
// trainer.step, trainer.key) is ignored, so a save_checkpoint file loads in strict mode.
LoadedModel load_model(const std::string& path, const Model& model, const LoadOptions& options = {},
                       LoadReport* report = nullptr);
// Only the parameters (for a model without state, or to fine-tune): as load_model, the model
// state's names being ignored as well.
std::vector<Array> load_parameters(const std::string& path, const Model& model, const LoadOptions& options = {},
                                   LoadReport* report = nullptr);

}  // namespace fluxion::nn
