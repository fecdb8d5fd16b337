// The interface every backend implements: compile a graph-IR program once, run it many times.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fluxion/backend.h"
#include "ir/ir.h"
#include "runtime/executable.h"

namespace fluxion::backends {

using Executable = runtime::Executable;

// Compiles `p` for `backend`. Raises Error when the backend is not built or not usable here.
std::unique_ptr<Executable> compile(const ir::Program& p, Backend backend);

// The settings read at every compile that change what `backend` compiles from the same program,
// as text: part of the in-process compile cache's key.
std::string compile_settings(Backend backend);

}  // namespace fluxion::backends
