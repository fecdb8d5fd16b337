// What generated code calls at run time: the thread pool that splits a kernel's outermost
// dimension, the collectives, the random-number helpers (the same Philox recipes as the interpreter), and the
// timestamps of a profiled program.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

namespace fluxion::cpu {

// Run-time error codes returned by the entry point: kWhileMaxIters + m when a while loop with
// max_iters = m would start iteration m + 1; kCollectiveFailed when a collective raised an Error
// (take_collective_failure keeps it for the calling thread).
enum ErrorCode : int32_t { kOk = 0, kWhileMaxIters = 1, kCollectiveFailed = -1 };

// The version of the interface between generated code and these helpers: their names, their
// signatures, the error codes and the entry point's signature. An exported CPU program records
// the version it was generated against and loads only into a library of the same version, so a
// change to any of them must increase it (tests/runtime pins the list of helpers).
inline constexpr uint32_t kHelpersAbi = 4;  // 2: fx_debug_print; 3: chunks in grains; 4: fx_parallel_group

struct RuntimeSymbol {
  const char* name;
  void* address;
};
// Every helper generated code may call, for registration with the JIT.
const std::vector<RuntimeSymbol>& runtime_symbols();

using KernelFn = void (*)(void** bufs, int64_t begin, int64_t end);
// Both split [0, n) into consecutive ranges that begin at multiples of `grain` (a product's
// register tile of rows, so that no thread is left rows to run one at a time), except where n
// has fewer grains than ranges.
//
// Runs fn over [0, n) split into chunks across the pool's threads (the caller takes part);
// `work_per_item` sizes the chunks. Returns when every chunk is done.
void parallel_for(KernelFn fn, void** bufs, int64_t n, int64_t work_per_item, int64_t grain);
// Runs fn over [0, n) as exactly `count` consecutive parts, part i with the `buffers` pointers
// at parts + i * buffers, on as many of the pool's threads as there are parts. The parts do not
// depend on the thread count (split kernels: kernel/kernel_ir.h).
void parallel_parts(KernelFn fn, void** parts, int64_t buffers, int64_t n, int64_t count, int64_t grain);
// One kernel of kernels run side by side: what parallel_for takes. A kernel to run whole, on
// one thread, has a grain of at least n.
struct GroupKernel {
  KernelFn fn;
  void** bufs;
  int64_t n, work_per_item, grain;
};
// The most kernels the pool runs as one job; parallel_group runs more as several jobs.
inline constexpr int64_t kMaxGroupKernels = 8;
// Runs `count` kernels that do not depend on each other side by side: each is split into chunks
// as parallel_for splits it, and the pool's threads take the chunks of all of them in any order.
// Returns when every chunk is done.
void parallel_group(const GroupKernel* kernels, int64_t count);

// What the calling thread's last failed fx_collective or fx_debug_print raised (generated code then returns
// kCollectiveFailed), taken: the next call returns nullptr until another fails.
std::exception_ptr take_collective_failure();
// Waits for the calling thread's asynchronous collectives that are still running (a program
// that returned early leaves some) and forgets them: none writes into the arena after the call.
void finish_collectives();

// A profiled program (Target::profile) calls fx_profile_mark(kernel) before and after every
// kernel; the marks of the calling thread's current call, in order. At most kMaxProfileMarks
// are kept per call (the first ones), so recording never allocates after the first call.
struct ProfileMark {
  int32_t kernel;
  int64_t ns;  // steady clock
};
inline constexpr size_t kMaxProfileMarks = 2 * 65536;
std::vector<ProfileMark>& profile_marks();

}  // namespace fluxion::cpu
