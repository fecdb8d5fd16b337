// Backend selection: where a compiled program runs.
#pragma once

#include <vector>

namespace fluxion {

enum class Backend {
  Interp,  // the reference interpreter: simple, double precision inside, the test oracle
  Cpu,     // native code through LLVM ORC: fused kernels, one native entry point per program
  Vulkan,  // SPIR-V compute shaders through Vulkan: any GPU vendor, or lavapipe on the CPU
};

// "interp", "cpu", "vulkan".
const char* backend_name(Backend b);
// The backends compiled into this build and usable on this machine; tests run on each.
std::vector<Backend> available_backends();
// The backend `jit` uses when none is named.
Backend default_backend();

}  // namespace fluxion
