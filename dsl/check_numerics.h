// The numerics check of fluxion/runtime.h, applied after a compiled program's call.
#pragma once

#include <vector>

#include "fluxion/array.h"
#include "jit/pipeline.h"

namespace fluxion::detail {

// Raises Error when a float output holds a NaN or an infinity, naming where it came from.
void check_call_numerics(const driver::CompiledProgram& program, const std::vector<Array>& inputs,
                         const std::vector<Array>& outputs);

}  // namespace fluxion::detail
