// Compile times, every compile recorded. Per-kernel times: on the Vulkan backend from timestamp queries around every
// dispatch (docs/vulkan.md, "Profiling"), on the CPU backend from the clock read before and after every kernel by a
// separately compiled copy of the program (docs/cpu.md). Off by default: timestamps cost a little per kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fluxion {

// Turns profiling on or off from the next call of each program on. FLUXION_PROFILE=1 turns it on at start-up and prints the
// table to stderr at exit; FLUXION_PROFILE=<file.json> also writes the Chrome trace there.
void set_profiling(bool on);
bool profiling();

struct KernelTime {
  std::string name;     // "kernel 3: matmul add tanh" (the graph ops it contains), "copy", ...
  uint64_t calls = 0;   // dispatches, loop iterations included
  double total_us = 0;  // device time (CPU: wall time of the kernel, all its threads together)
  double mean_us = 0;
  // What its runs moved and computed in all, to set against the device's limits: the bytes of
  // the arrays each run read or wrote (each once: a lower bound on its memory traffic; a Vulkan
  // helper dispatch, such as a copy, counts the buffer ranges it touches), and the FLOPs of its
  // matrix product or convolution (2 per multiply-add; 0 for other kernels). 0 where not known
  // (a program loaded from an artifact).
  double bytes = 0;
  double flops = 0;
};

// Totals since the last reset, slowest first.
std::vector<KernelTime> kernel_times();
// The same as a readable table: name, calls, total and mean time, share of the total, and the
// rates its bytes and FLOPs came at (GB/s, TFLOP/s; "-" where not known), which a device's
// memory bandwidth and arithmetic peak bound; then a line "not timed: <why>" for each reason
// calls went untimed (a Vulkan device without timestamps).
std::string kernel_time_table();
void reset_kernel_times();
// One compile of a program by a backend (a program found in the in-process compile cache is
// not compiled again and not listed): from the traced program to runnable code.
struct CompileTime {
  // "program @main (traced from f.cpp:12)", or "(traced from f.cpp:12, called from g.cpp:30)"
  // where a library function that the user called compiled it (nn::Trainer::step)
  std::string program;
  std::string backend;  // "cpu", "vulkan", "interp"
  double seconds = 0;
  size_t kernels = 0;
  // CPU: the LLVM modules compiled (the entry point's and one per distinct larger kernel not
  // found in the on-disk cache) and on how many threads; 0 where the backend does not say.
  size_t compiled = 0;
  int threads = 0;
};

// Every compile since the last reset_kernel_times (at most the latest 1,000), oldest first,
// whether profiling is on or not. kernel_time_table() lists them after the kernels.
std::vector<CompileTime> compile_times();

// Writes the dispatches of the last profiled call as a Chrome trace (chrome://tracing,
// Perfetto), atomically (a temporary file, then rename). Raises Error when it cannot write.
void write_chrome_trace(const std::string& path);

}  // namespace fluxion
