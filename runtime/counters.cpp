#include "runtime/counters.h"

#include "fluxion/runtime.h"

namespace fluxion {

runtime::AtomicCounters& runtime::counters() {
  static AtomicCounters c;
  return c;
}

RuntimeCounters counters() {
  auto& c = runtime::counters();
  RuntimeCounters r;
  r.program_calls = c.program_calls.load();
  r.native_calls = c.native_calls.load();
  r.kernel_launches = c.kernel_launches.load();
  r.compiles = c.compiles.load();
  r.cache_hits = c.cache_hits.load();
  r.disk_cache_hits = c.disk_cache_hits.load();
  r.traces = c.traces.load();
  r.loads = c.loads.load();
  r.submissions = c.submissions.load();
  r.fence_waits = c.fence_waits.load();
  r.device_allocations = c.device_allocations.load();
  r.collective_wait_ns = c.collective_wait_ns.load();
  return r;
}

void reset_counters() {
  auto& c = runtime::counters();
  c.program_calls = 0;
  c.native_calls = 0;
  c.kernel_launches = 0;
  c.compiles = 0;
  c.collective_wait_ns = 0;
  c.cache_hits = 0;
  c.disk_cache_hits = 0;
  c.traces = 0;
  c.loads = 0;
  c.submissions = 0;
  c.fence_waits = 0;
  c.device_allocations = 0;
}

}  // namespace fluxion
