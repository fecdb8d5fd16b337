// Training checkpoints: everything a TrainState holds, in one safetensors file. Parameters and
// model state are stored under their own names ("0.weight", "1.running_mean", as a torch
// state_dict's parameters and buffers), optimizer state (hyperparameters included) under
// "optimizer." + its name, the step count and the random key as "trainer.step" and
// "trainer.key"; metadata records the model summary and the optimizer. A run resumed from a
// checkpoint continues exactly as the uninterrupted run would have.
#pragma once

#include <string>

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
// Only the parameters (for a model without state, or to fine-tune); the other entries are ignored.
std::vector<Array> load_parameters(const std::string& path, const Model& model);

}  // namespace fluxion::nn
