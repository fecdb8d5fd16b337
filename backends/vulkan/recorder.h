// Recording a program's whole run as one list of dispatches (runtime/vulkan/recording.h) from
// its schedule, compiling each kernel's and small loop's shader on the way.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backends/vulkan/glsl.h"
#include "backends/vulkan/glsl_loop.h"
#include "ir/ir.h"
#include "kernel/kernel_ir.h"
#include "runtime/vulkan/recording.h"

namespace fluxion::vulkan {

// A kernel's pipeline and the layout of its arguments.
struct CompiledKernel {
  VkPipeline pipeline = VK_NULL_HANDLE;
  KernelShader shader;
  VkPipeline order_pipeline = VK_NULL_HANDLE;  // shader.order_glsl's, when it has one
};
using KernelCompiler =
    std::function<const CompiledKernel&(const ir::Region&, const kernel::RegionSchedule&, size_t kernel)>;

// A loop run as one workgroup (glsl_loop.h): its pipeline and arguments.
struct CompiledLoop {
  VkPipeline pipeline = VK_NULL_HANDLE;
  LoopShader shader;
};
using LoopCompiler =
    std::function<const CompiledLoop&(const ir::Node& loop, const std::vector<kernel::RegionSchedule>& subs)>;

struct RecordOptions {
  // Recorded iterations per unbounded while loop, by loop number (order of first recording).
  std::map<int, int64_t> capacity;
  int64_t default_capacity = 16;
  // Loops whose regions fit one workgroup run as one dispatch (FLUXION_VULKAN_LOOP_KERNELS=0
  // turns this off: every iteration's kernels are then recorded as dispatches).
  bool loop_kernels = true;
  // The device's cap on loop iterations per invocation (lavapipe: 65535), with a margin; 0: none.
  int64_t loop_iteration_limit = 0;
  // Keep each dispatch's accesses in Recording::accesses (for the barrier audit).
  bool keep_accesses = false;
  // Leave out the barrier that would come before barrier number `drop_barrier` (0-based): a
  // hazard planted on purpose, which the barrier audit must report. -1: none.
  int64_t drop_barrier = -1;
};

// The step ranges [first, last) of a scan of `length` steps run as a loop kernel, in dispatch
// order: one range on a device without a cap on loop iterations (limit 0), else ranges of at
// most max(1, limit / iterations_per_step) steps. A scan of no steps still gets the one empty
// range [0, 0), whose dispatch initialises the carries.
std::vector<std::pair<int64_t, int64_t>> scan_step_ranges(int64_t length, int64_t loop_iteration_limit,
                                                          int64_t iterations_per_step);

Recording record(const ir::Program& p, const kernel::RegionSchedule& s, const KernelCompiler& compile,
                 const LoopCompiler& compile_loop, const RecordOptions& options,
                 std::vector<const ir::Node*>* while_loops);

// io-table entries after the program's parameters and results.
inline int32_t arena_entry(const ir::Program& p) {
  return static_cast<int32_t>(p.body.params.size() + p.body.results.size());
}
inline int32_t consts_entry(const ir::Program& p) { return arena_entry(p) + 1; }
inline int32_t status_entry(const ir::Program& p) { return arena_entry(p) + 2; }

}  // namespace fluxion::vulkan
