// The interpreter backend: runs graph IR with the reference evaluator (eval/), as the
// oracle the other backends are tested against.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace fluxion::interp {

// Nothing to compile: the executable runs `p` as it is.
std::unique_ptr<backends::Executable> compile(const ir::Program& p);

}  // namespace fluxion::interp
