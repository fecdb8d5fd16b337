// The three systems' versions of W1..W7. Each returns one CaseSpec per (workload, mode) it
// implements; a CaseSpec builds its Case only when it is about to be measured.
#pragma once

#include <string>
#include <vector>

#include "data.h"
#include "harness.h"

namespace bench {

// Careful C++: fused loops, OpenBLAS sgemm for matmuls, -O3 -march=native (W1, W2, W3, W5, W7).
std::vector<CaseSpec> handwritten_cases(const Inputs& in);
// Debian's libtorch, C++ API, eager mode with autograd (W1..W7).
std::vector<CaseSpec> libtorch_cases(const Inputs& in);
// The Fluxion DSL compiled for `backend` ("cpu", "interp" or "vulkan"), named "fluxion-<backend>";
// gradient rows time `cache_samples` fresh jit objects for cache_hit_us. With `device_inputs`
// (Vulkan), the arguments are in device memory before the first call, as a GPU peer keeps its
// tensors, so calls time no uploads. Throws Error for an unknown backend name.
std::vector<CaseSpec> fluxion_cases(const Inputs& in, const std::string& backend, int cache_samples,
                                    bool device_inputs = false);

// Thread counts for the parallel parts of each system.
void handwritten_set_threads(int n);  // OpenMP loops and OpenBLAS (libtorch's BLAS as well)
void libtorch_set_threads(int n);
void fluxion_set_threads(int n);      // may throw when the runtime rejects it

}  // namespace bench
