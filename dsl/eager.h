// fluxion::eager's machinery: a top-level trace whose ops are evaluated on the reference
// interpreter as they are recorded, so that a debugger stepping through the traced function sees
// each value (fluxion::debug::value) as soon as the line that computes it has run.
#pragma once

#include <vector>

#include "dsl/trace.h"
#include "fluxion/array.h"

namespace fluxion::detail {

struct EagerValues {
  std::vector<Array> by_id;  // by value id of the frame's region; empty until evaluated
  size_t evaluated = 0;      // the region's nodes before this one have been evaluated
};

// Evaluates the nodes recorded in eager frame `f` since the last call.
void evaluate_recorded(Frame& f);

}  // namespace fluxion::detail
