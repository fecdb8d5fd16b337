// The CPU backend's entry: a graph-IR program compiled to one native function (docs/cpu.md).
#pragma once

#include <memory>

#include "backends/backend.h"

namespace fluxion::cpu {

// Fuses, plans and compiles `p`. Raises Error when LLVM cannot compile for this host.
std::unique_ptr<backends::Executable> compile(const ir::Program& p);

}  // namespace fluxion::cpu
