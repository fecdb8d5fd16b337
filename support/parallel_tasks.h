// Independent tasks run side by side on threads of their own: the backends' compiles of
// distinct kernels (LLVM modules, Vulkan pipelines), which are too few and too long for the
// kernel thread pool.
#pragma once

#include <cstddef>
#include <functional>

namespace fluxion::support {

// Runs task(0) ... task(n - 1) on up to `threads` threads, the calling one among them, and
// returns how many ran; the first exception a task throws is rethrown once all have stopped.
int for_each_in_parallel(size_t n, int threads, const std::function<void(size_t)>& task);

}  // namespace fluxion::support
