// Timing of one benchmark cell: warm-up, repeated timed calls, allocation and round-trip counts.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace bench {

// One prepared (workload, system, mode) cell. `run` is the call that is timed; everything it
// needs (inputs, output buffers, compiled programs) is made before. `value` reads the loss of
// the first call and `grad_norm` the L2 norm of all its gradients (outside the timing).
struct Case {
  std::function<void()> run;
  std::function<double()> value;
  std::function<double()> grad_norm;  // empty when the mode returns no gradients
  // Fluxion's run-time counters: reset, then read host round trips and kernels since the reset.
  // Empty for the peers: round trips are not measurable there (the record says null).
  std::function<void()> reset_counters;
  std::function<double()> roundtrips;
  std::function<double()> kernel_launches;
  // Fluxion: the same program through Compiled::run_into with outputs preallocated once (the
  // call that can allocate nothing); empty for the peers.
  std::function<void()> run_preallocated;
  // Set by a case whose make() already ran the first call (Fluxion: the call that compiles).
  bool first_call_done = false;
  std::optional<double> compile_ms;
  std::optional<bool> compile_cached;  // the first call was served by a compile cache
  std::optional<double> cache_hit_us;  // first call of a fresh jit object of the same structure
};

// Builds a Case; may throw (a backend that cannot compile, a library that is missing).
struct CaseSpec {
  std::string workload;  // "W1".."W7"
  std::string system;    // "handwritten", "libtorch", "fluxion-cpu", ...
  std::string mode;      // "primal", "grad", "step"
  std::function<Case()> make;
};

struct Record {
  std::string workload, system, mode;
  int threads = 1;
  double median_us = 0, min_us = 0;
  int64_t reps = 0;
  double allocs_per_call = 0;
  double alloc_bytes_per_call = 0;
  std::optional<double> host_roundtrips_per_call;
  std::optional<double> kernel_launches_per_call;
  std::optional<double> compile_ms;
  std::optional<bool> compile_cached;
  std::optional<double> cache_hit_us;
  std::optional<double> prealloc_median_us, prealloc_min_us, prealloc_allocs_per_call;
  double value = 0;
  std::optional<double> grad_norm;
};

struct MeasureOptions {
  double target_s = 0.5;   // the timed calls of a cell add up to about this
  double warmup_s = 0.05;  // warm-up calls add up to at least this (and at least 2 calls)
  int min_reps = 5;
  int max_reps = 100000;
};

// Runs the first call (unless the case did), the warm-up, the timed calls (each timed alone),
// then a few more calls with allocation and round-trip counting on; then the same for
// run_preallocated, when the case has it.
Record measure(const CaseSpec& spec, Case& c, int threads, const MeasureOptions& opt);

// Microseconds on a monotonic clock.
double now_us();

}  // namespace bench
