// Per-kernel device times, from timestamp queries around every dispatch of the Vulkan backend
// (docs/vulkan.md, "Profiling"). Off by default: timestamps cost a little per dispatch.
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
  double total_us = 0;  // device time
  double mean_us = 0;
};

// Totals since the last reset, slowest first.
std::vector<KernelTime> kernel_times();
// The same as a readable table: name, calls, total and mean time, share of the total.
std::string kernel_time_table();
void reset_kernel_times();
// Writes the dispatches of the last profiled call as a Chrome trace (chrome://tracing,
// Perfetto), atomically (a temporary file, then rename). Raises Error when it cannot write.
void write_chrome_trace(const std::string& path);

}  // namespace fluxion
