// The path of a program from traced IR to something a backend runs, as one linear list of
// steps (pipeline.cpp). Set FLUXION_DUMP_IR=1 to print the IR after each step to stderr.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "jit/ir/ir.h"

namespace fluxion::compiler {

struct CompiledProgram {
  ir::Program traced;     // as recorded from the user's function
  ir::Program optimized;  // after simplification: what the backend runs
  std::unique_ptr<backends::Executable> executable;
};

// verify -> simplify (constant folding, CSE, DCE) -> verify -> backend compile.
CompiledProgram compile(ir::Program traced, Backend backend);

}  // namespace fluxion::compiler
