// The path of a program from traced IR to something a backend runs, as one linear list of
// steps (pipeline.cpp). Set FLUXION_DUMP_IR=1 to print the IR after each step to stderr.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "ir/ir.h"

namespace fluxion::driver {

struct CompiledProgram {
  ir::Program traced;                                      // as recorded from the user's function
  ir::Program optimized;                                   // after simplification: what the backend runs
  std::shared_ptr<const backends::Executable> executable;  // shared through the compile cache
};

// verify -> simplify (constant folding, CSE, DCE) -> verify -> canonical node order (ir.h) ->
// compile-cache lookup -> backend compile (fusion, memory plan, code generation).
CompiledProgram compile(ir::Program traced, Backend backend);

}  // namespace fluxion::driver
