// The process-wide counters behind fluxion::counters() (runtime.h), bumped by every backend.
#pragma once

#include <atomic>
#include <cstdint>

namespace fluxion::backends {

struct AtomicCounters {
  std::atomic<uint64_t> program_calls{0}, native_calls{0}, kernel_launches{0}, compiles{0}, cache_hits{0},
      disk_cache_hits{0}, submissions{0}, fence_waits{0}, device_allocations{0};
};
AtomicCounters& counters();

}  // namespace fluxion::backends
