// A whole loop in one shader (glsl_loop.cpp): a scan or while loop whose body is small enough
// for one workgroup runs every iteration inside a single dispatch of one workgroup, its kernels
// separated by workgroup barriers. This is what keeps a tiny network's long loop (W7)
// from costing a dispatch per kernel per iteration.
#pragma once

#include <string>
#include <vector>

#include "backends/vulkan/glsl.h"
#include "backends/vulkan/plan.h"

namespace fluxion::vulkan {

// What one argument of a loop shader locates; the recorder supplies the place.
struct LoopArg {
  enum class Kind : uint8_t {
    Operand,  // the loop node's operand `index`
    Result,   // its result `index` (the carries live there during the loop)
    Arena,    // the loop's nested arena
    Global,   // a non-splat constant of region `region` (0: scan body / while cond, 1: while body), value `index`
    Iota,     // the i32 iteration indices 0 .. length-1 (scan)
    Scratch,  // scratch bytes for staging swapped carries
    Status,   // the run's status word
  };
  Kind kind;
  int64_t index = 0;
  int region = 0;
  friend bool operator==(const LoopArg&, const LoopArg&) = default;
};

struct LoopShader {
  std::string name;
  std::string glsl;
  std::vector<LoopArg> args;  // argument entries 1.. in order; then two words: the step range
  int64_t scratch_bytes = 0;
  // An upper bound on the loop iterations (loop entries included) one invocation runs per step
  // of the loop, for devices that cap them (lavapipe stops an invocation after 65535).
  int64_t iterations_per_step = 0;
};

// Whether loop node n (scan or while) with the schedules of its regions runs as one workgroup:
// its regions hold only kernels (no nested control flow), each small.
bool fits_one_workgroup(const ir::Node& n, const std::vector<kernel::RegionSchedule>& subs);

// The shader of loop node n. A scan runs the steps [word 0, word 1) given after the arguments,
// so a long scan may be split over several dispatches; the carries are initialised when the
// range starts at 0. A while loop runs whole. For a while loop with max_iters = m, status kWhileMaxIters + m is
// written when iteration m + 1 would start (recorder.h).
// Its kernels run by in_loop_plan in the tuning's loop workgroup.
LoopShader emit_loop(const ir::Node& n, const std::vector<kernel::RegionSchedule>& subs, const ShaderTarget& target,
                     const DeviceTuning& tuning, const std::string& name);

}  // namespace fluxion::vulkan
