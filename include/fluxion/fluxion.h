// The umbrella header: everything a user of Fluxion needs.
#pragma once

#include "fluxion/array.h"
#include "fluxion/autodiff.h"
#include "fluxion/backend.h"
#include "fluxion/control.h"
#include "fluxion/debug.h"
#include "fluxion/dtype.h"
#include "fluxion/error.h"
#include "fluxion/jit.h"
#include "fluxion/ops.h"
#include "fluxion/profile.h"
#include "fluxion/runtime.h"
#include "fluxion/tensor.h"
#include "fluxion/tree.h"
#include "fluxion/version.h"
#include "fluxion/vmap.h"
#include "fluxion/vulkan.h"
