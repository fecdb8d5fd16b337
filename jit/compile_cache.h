// The in-memory compile cache: one compiled program per (backend, optimized program text), so
// two functions of the same structure share native code whatever their C++ type, and the
// order in which they were compiled does not matter. Thread-safe: a program being compiled by
// one thread is waited for, not compiled again, by another.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "backends/backend.h"

namespace fluxion::driver {

using ExecutablePtr = std::shared_ptr<const backends::Executable>;

// The cached executable for `key`, or the result of `build` (stored for later). Raises what
// `build` raises; a failed build is not cached.
ExecutablePtr cached_compile(const std::string& key, const std::function<ExecutablePtr()>& build);

}  // namespace fluxion::driver
