// The process-wide store behind fluxion/profile.h: backends report each profiled call's
// dispatches here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fluxion/profile.h"

namespace fluxion::runtime {

struct TimedDispatch {
  const std::string* name;  // owned by the reporting program, alive during report()
  double start_us;          // from the call's first timestamp
  double duration_us;
  double bytes = 0, flops = 0;  // what it moved and computed (KernelTime), 0 when not known
};

// Adds one call's dispatches to the totals and makes them the trace of the last call.
void report_profile(const std::vector<TimedDispatch>& dispatches);
// A compile that finished (kept whether profiling is on or not).
void report_compile(CompileTime compile);
// "program @main (traced from f.cpp:12) for cpu in 2.31 s: 120 kernels, 41 modules compiled on
// 2 threads".
std::string compile_text(const CompileTime& c);
// A profiled call whose kernels could not be timed, and why; kernel_time_table() says so.
void report_untimed(const std::string& why);

}  // namespace fluxion::runtime
