#include "harness.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "alloc_counter.h"

namespace bench {

double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

namespace {

struct Timing {
  double median_us = 0, min_us = 0;
  int64_t reps = 0;
};

double median_of_sorted(const std::vector<double>& t) {
  size_t n = t.size();
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

// Warm-up calls for at least opt.warmup_s and 2 calls; then timed calls, each timed alone, as
// many as fill opt.target_s at the warm-up's median cost (clamped to [min_reps, max_reps]).
Timing time_calls(const std::function<void()>& run, const MeasureOptions& opt) {
  std::vector<double> warm;
  double t0 = now_us();
  while (warm.size() < 2 || now_us() - t0 < opt.warmup_s * 1e6) {
    double s = now_us();
    run();
    warm.push_back(now_us() - s);
    if (warm.back() > opt.target_s * 1e6) break;  // one slow call is warm-up enough
  }
  std::sort(warm.begin(), warm.end());
  int64_t reps = static_cast<int64_t>(opt.target_s * 1e6 / std::max(median_of_sorted(warm), 0.01));
  reps = std::clamp<int64_t>(reps, opt.min_reps, opt.max_reps);

  std::vector<double> times(static_cast<size_t>(reps));
  for (double& t : times) {
    double s = now_us();
    run();
    t = now_us() - s;
  }
  std::sort(times.begin(), times.end());
  return {median_of_sorted(times), times.front(), reps};
}

// Heap allocations per call over `calls` calls (made apart from the timed ones, so that
// counting cannot slow those).
AllocCounts count_allocs(const std::function<void()>& run, int64_t calls) {
  start_alloc_counting();
  for (int64_t i = 0; i < calls; ++i) run();
  return stop_alloc_counting();
}

}  // namespace

Record measure(const CaseSpec& spec, Case& c, int threads, const MeasureOptions& opt) {
  Record r;
  r.workload = spec.workload;
  r.system = spec.system;
  r.mode = spec.mode;
  r.threads = threads;
  r.compile_ms = c.compile_ms;
  r.compile_cached = c.compile_cached;
  r.cache_hit_us = c.cache_hit_us;

  // The first call: its results are the ones compared across systems (a training step changes
  // its parameters on every later call).
  if (!c.first_call_done) c.run();
  r.value = c.value();
  if (c.grad_norm) r.grad_norm = c.grad_norm();

  Timing t = time_calls(c.run, opt);
  r.median_us = t.median_us;
  r.min_us = t.min_us;
  r.reps = t.reps;

  // Counted calls: about a tenth of the reps, at least one, at most 20.
  int64_t counted = std::clamp<int64_t>(t.reps / 10, 1, 20);
  double n = static_cast<double>(counted);
  if (c.reset_counters) c.reset_counters();
  AllocCounts a = count_allocs(c.run, counted);
  r.allocs_per_call = static_cast<double>(a.calls) / n;
  r.alloc_bytes_per_call = static_cast<double>(a.bytes) / n;
  if (c.roundtrips) r.host_roundtrips_per_call = c.roundtrips() / n;
  if (c.kernel_launches) r.kernel_launches_per_call = c.kernel_launches() / n;

  if (c.run_preallocated) {
    Timing p = time_calls(c.run_preallocated, opt);
    r.prealloc_median_us = p.median_us;
    r.prealloc_min_us = p.min_us;
    r.prealloc_allocs_per_call = static_cast<double>(count_allocs(c.run_preallocated, counted).calls) / n;
  }
  return r;
}

}  // namespace bench
