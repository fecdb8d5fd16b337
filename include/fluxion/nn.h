// The neural-network library: layers, initialisers, losses, optimizers, training steps and
// checkpoints (docs/nn.md).
#pragma once

#include "fluxion/data.h"
#include "fluxion/fluxion.h"
#include "fluxion/nn/attention.h"
#include "fluxion/nn/checkpoint.h"
#include "fluxion/nn/functional.h"
#include "fluxion/nn/init.h"
#include "fluxion/nn/layer.h"
#include "fluxion/nn/layers.h"
#include "fluxion/nn/losses.h"
#include "fluxion/nn/normalization.h"
#include "fluxion/nn/optim.h"
#include "fluxion/nn/plateau.h"
#include "fluxion/nn/recurrent.h"
#include "fluxion/nn/schedule.h"
#include "fluxion/nn/trainer.h"
#include "fluxion/nn/transform.h"
#include "fluxion/safetensors.h"
