// A program's whole run as one list of dispatches (recorder.cpp): every kernel of every step,
// with loops unrolled on the device side (docs/vulkan.md, "Loops stay on the device"). What
// varies between the dispatches of a loop's iterations (slices of per-step inputs and outputs,
// the iteration index) lives in each dispatch's argument table, so the command buffer is
// recorded once and replayed by every call.
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
#include "jit/ir/ir.h"
#include "jit/kernel/kernel_ir.h"
#include "runtime/collective.h"

namespace fluxion::vulkan {

// A place in device memory: byte `off` of io-table entry `io`. Entries: the program's
// parameters, then its results, then kArena, kConsts (constants and scratch flags) and kStatus.
struct Loc {
  int32_t io = -1;
  int64_t off = 0;
  Loc operator+(int64_t d) const { return {io, off + d}; }
};

struct Range {
  int32_t io;
  int64_t begin, end;
};

struct Dispatch {
  VkPipeline pipeline = VK_NULL_HANDLE;
  std::array<uint32_t, 3> groups{1, 1, 1};
  int64_t args_word = 0;  // first word of its argument table
  bool barrier_before = false;
  int name = -1;  // index into Recording::names
};

// The bytes a dispatch reads and writes (for the barrier audit, barrier_audit.h).
struct Access {
  std::vector<Range> reads, writes;
};

// A collective the host runs for the program: it reads `in` and writes `out`.
struct HostCollective {
  interp::CollectiveCall call;
  Loc in, out;
  int64_t in_bytes = 0, out_bytes = 0;
};

// Where the host steps in between the dispatches before `dispatch` and the rest: the executable
// submits the dispatches in segments and, between two, starts collective `collective` (reads
// its operand back and hands it to the communication thread) or finishes it (waits for it and
// writes its result). The segments in between run on the device meanwhile.
struct HostStep {
  enum class Kind : uint8_t { Start, Finish };
  Kind kind = Kind::Start;
  size_t dispatch = 0;
  size_t collective = 0;  // into Recording::collectives
};

struct Recording {
  std::vector<int64_t> args;  // every dispatch's argument table, concatenated
  std::vector<Dispatch> dispatches;
  std::vector<HostCollective> collectives;
  std::vector<HostStep> host_steps;  // in dispatch order
  std::vector<Access> accesses;      // per dispatch, when RecordOptions::keep_accesses
  std::vector<std::byte> consts;     // initial bytes of the kConsts buffer
  std::vector<std::string> names;    // kernel names with the graph ops they contain
};

// A kernel's pipeline and the layout of its arguments.
struct CompiledKernel {
  VkPipeline pipeline = VK_NULL_HANDLE;
  KernelShader shader;
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

// Status codes a run leaves in its status word, which starts at kStatusOk; kernels lower it
// with atomicMin, so a loop that ran out of recorded iterations (negative: record more and
// run again) outranks an error it may have caused downstream (positive).
inline constexpr int32_t kStatusOk = INT32_MAX;
// kWhileMaxIters + m: a while loop with max_iters = m would start iteration m + 1 (as the CPU).
inline constexpr int32_t kWhileMaxIters = 1;
// -(k + 1): unbounded while loop k ran out of recorded iterations; record more and run again.

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
