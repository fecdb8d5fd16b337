// What the small single-purpose benchmarks (fluxion_matmul_bench, fluxion_scatter_bench) share:
// repeated timed calls, and inputs from a fixed linear congruential sequence.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace bench {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The times of calls of f in microseconds, sorted: `warmup` untimed calls, then timed ones
// until there are at least `min_reps` and they add up to `seconds`, or `max_reps` of them once
// there are `min_reps`.
template <class F>
std::vector<double> call_times_us(F f, int warmup, size_t min_reps, double seconds, size_t max_reps = SIZE_MAX) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> ts;
  double total = 0;
  while (ts.size() < min_reps || (total < seconds * 1e6 && ts.size() < max_reps)) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    ts.push_back(us);
    total += us;
  }
  std::sort(ts.begin(), ts.end());
  return ts;
}

// n floats in [-0.5, 0.5), the same on every machine and standard library.
inline std::vector<float> lcg_values(int64_t n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
  }
  return v;
}

}  // namespace bench
