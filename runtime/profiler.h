// The process-wide store behind fluxion/profile.h: backends report each profiled call's
// dispatches here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fluxion::runtime {

struct TimedDispatch {
  const std::string* name;  // owned by the reporting program, alive during report()
  double start_us;          // from the call's first timestamp
  double duration_us;
  double bytes = 0, flops = 0;  // what it moved and computed (KernelTime), 0 when not known
};

// Adds one call's dispatches to the totals and makes them the trace of the last call.
void report_profile(const std::vector<TimedDispatch>& dispatches);
// A profiled call whose kernels could not be timed, and why; kernel_time_table() says so.
void report_untimed(const std::string& why);

}  // namespace fluxion::runtime
