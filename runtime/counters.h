// The process-wide counters behind fluxion::counters() (runtime.h), bumped by every backend.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace fluxion::runtime {

struct AtomicCounters {
  std::atomic<uint64_t> program_calls{0}, native_calls{0}, kernel_launches{0}, compiles{0}, cache_hits{0},
      disk_cache_hits{0}, traces{0}, loads{0}, submissions{0}, fence_waits{0}, device_allocations{0},
      collective_wait_ns{0};
};
AtomicCounters& counters();

// Adds the time from its construction to its destruction to collective_wait_ns.
class WaitTimer {
 public:
  WaitTimer() : start_(std::chrono::steady_clock::now()) {}
  ~WaitTimer() {
    counters().collective_wait_ns += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count());
  }
  WaitTimer(const WaitTimer&) = delete;
  WaitTimer& operator=(const WaitTimer&) = delete;

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace fluxion::runtime
