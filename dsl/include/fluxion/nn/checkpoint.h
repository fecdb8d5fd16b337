// Training checkpoints: a model's parameters and its optimizer's state in one safetensors file.
// Parameters are stored under their own names ("0.weight", as a torch state_dict), optimizer
// state under "optimizer." + its name; metadata records the model summary and the optimizer.
#pragma once

#include <string>

#include "fluxion/nn/layer.h"
#include "fluxion/nn/optim.h"
#include "fluxion/nn/trainer.h"

namespace fluxion::nn {

// Written atomically (see save_safetensors).
void save_checkpoint(const std::string& path, const Model& model, const Optimizer& optimizer, const TrainState& state);
// Replaces state's parameters and optimizer state with the file's. Every name, shape and dtype
// is checked first: on any mismatch (missing or unexpected names, other shapes or dtypes)
// raises Error listing them, and `state` is left unchanged.
void load_checkpoint(const std::string& path, const Model& model, const Optimizer& optimizer, TrainState& state);
// Only the parameters (for inference); the optimizer entries are ignored.
std::vector<Array> load_parameters(const std::string& path, const Model& model);

}  // namespace fluxion::nn
