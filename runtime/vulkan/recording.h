// A Vulkan program's whole run as one list of dispatches, which backends/vulkan/recorder.cpp
// makes from the kernels and an exported program holds: every kernel of every step, with loops
// unrolled on the device side (docs/vulkan.md, "Loops stay on the device"). What varies between
// the dispatches of a loop's iterations lives in each dispatch's argument table, so the command
// buffer is recorded once and replayed by every call.
#pragma once

#include <vulkan/vulkan.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/collective.h"
#include "runtime/debug_print.h"

namespace fluxion::vulkan {

// A place in device memory: byte `off` of io-table entry `io`. Entries: the program's
// parameters, then its results, then kArena, kConsts (constants and scratch flags) and kStatus.
struct Loc {
  int32_t io = -1;
  int64_t off = 0;
  Loc operator+(int64_t d) const { return {io, off + d}; }
  bool operator==(const Loc&) const = default;
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

// What a dispatch moves and computes, for the profiler's rates: the bytes of the buffer ranges
// it touches (each once), and the FLOPs of its matrix product or convolution (0 for others).
struct DispatchCost {
  double bytes = 0, flops = 0;
};

// A collective the host runs for the program: it reads `in` and writes `out`.
struct HostCollective {
  runtime::CollectiveCall call;
  Loc in, out;
  int64_t in_bytes = 0, out_bytes = 0;
};

// A debug_print the host runs for the program: when the byte at `guard` (the flag of the
// dispatches around it: a branch not taken or a loop iteration past the end has 0) is set, it
// reads `operands` back and formats the line.
struct HostPrint {
  runtime::PrintCall call;
  Loc guard;
  std::vector<Loc> operands;
};

// Where the host steps in between the dispatches before `dispatch` and the rest: the executable
// submits the dispatches in segments and, between two, starts collective `index` (reads its
// operand back and hands it to the communication thread), finishes it (waits for it and writes
// its result), or runs print `index`. The segments in between run on the device meanwhile.
struct HostStep {
  enum class Kind : uint8_t { Start, Finish, Print };
  Kind kind = Kind::Start;
  size_t dispatch = 0;
  size_t index = 0;  // into Recording::collectives, or Recording::prints for a Print
};

struct Recording {
  std::vector<int64_t> args;  // every dispatch's argument table, concatenated
  std::vector<Dispatch> dispatches;
  std::vector<HostCollective> collectives;
  std::vector<HostPrint> prints;
  std::vector<HostStep> host_steps;  // in dispatch order
  std::vector<Access> accesses;      // per dispatch, when RecordOptions::keep_accesses
  std::vector<DispatchCost> costs;   // per dispatch; empty in an exported program
  std::vector<std::byte> consts;     // initial bytes of the kConsts buffer
  std::vector<std::string> names;    // kernel names with the graph ops they contain
};

// Status codes a run leaves in its status word, which starts at kStatusOk; kernels lower it
// with atomicMin, so a loop that ran out of recorded iterations (negative: record more and
// run again) outranks an error it may have caused downstream (positive).
inline constexpr int32_t kStatusOk = INT32_MAX;
// kWhileMaxIters + m: a while loop with max_iters = m would start iteration m + 1 (as the CPU).
inline constexpr int32_t kWhileMaxIters = 1;
// -(k + 1): unbounded while loop k ran out of recorded iterations; record more and run again.

}  // namespace fluxion::vulkan
