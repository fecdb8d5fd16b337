// fluxion_scatter_bench: the gradient of an embedding lookup on the CPU backend, as Fluxion
// differentiates take (a scatter_add of the rows' adjoints into the table) against the one-hot
// form it replaced (the transposed one-hot matrix of the indices times the adjoints: a matmul of
// [rows, count] by [count, width]). A 50,000 x 128 f32 table looked up at 4,096 i32 indices; the
// loss is sum(take(table, indices) * W) for a fixed random W [4096, 128]. Prints min and median
// milliseconds of each, their ratio (the target: the scatter at least 50x faster), whether
// repeated calls of the scatter give the same bits, at 1 thread and at every thread, and how far
// the two forms' gradients are apart.
#include <fluxion/fluxion.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cpu_target.h"
#include "timing.h"

namespace fx = fluxion;

namespace {

constexpr int64_t kRows = 50000, kWidth = 128, kCount = 4096;

struct Timing {
  double min_ms = 0, median_ms = 0;
  size_t reps = 0;
};

// One warm-up call, then at least `min_reps` calls and `seconds` in all.
template <class F>
Timing time_ms(F f, size_t min_reps, double seconds) {
  std::vector<double> ts = bench::call_times_us(f, 1, min_reps, seconds);
  return {ts.front() / 1e3, ts[ts.size() / 2] / 1e3, ts.size()};
}

bool same_bits(const fx::Array& a, const fx::Array& b) {
  auto bytes = static_cast<size_t>(a.size() * fx::dtype_size(a.dtype()));
  return a.type() == b.type() && std::memcmp(a.data(), b.data(), bytes) == 0;
}

}  // namespace

int main() {
  std::printf("%s\n", bench::cpu_target_line().c_str());
  std::vector<int32_t> idx(kCount);
  uint32_t seed = 12345;
  for (auto& i : idx) {
    seed = seed * 1664525u + 1013904223u;
    i = static_cast<int32_t>(seed % static_cast<uint32_t>(kRows));
  }
  fx::Array table(bench::lcg_values(kRows * kWidth, 1), {kRows, kWidth});
  fx::Array indices(idx, {kCount});
  fx::Array w(bench::lcg_values(kCount * kWidth, 2), {kCount, kWidth});

  // The gradient as Fluxion takes it: take's reverse rule, a scatter_add.
  auto scatter =
      fx::jit(fx::grad([](fx::Tensor t, fx::Tensor i, fx::Tensor w) { return fx::sum(fx::take(t, i, 0) * w); }, {0}),
              fx::Backend::Cpu);
  // The one-hot form, written out: one_hot(indices, rows)^T @ W.
  auto one_hot =
      fx::jit([](fx::Tensor i, fx::Tensor w) { return fx::matmul(fx::transpose(fx::one_hot(i, kRows, fx::f32)), w); },
              fx::Backend::Cpu);
  std::printf("table [%lld, %lld] f32, %lld i32 indices; kernels of each form:\n%s%s\n", static_cast<long long>(kRows),
              static_cast<long long>(kWidth), static_cast<long long>(kCount),
              scatter.lower(table, indices, w).kernels().c_str(), one_hot.lower(indices, w).kernels().c_str());

  int all = fx::num_threads();
  fx::Array reference = scatter(table, indices, w)[0];
  for (int threads : {1, all}) {
    fx::set_num_threads(threads);
    Timing s = time_ms([&] { (void)scatter(table, indices, w); }, 20, 2.0);
    Timing o = time_ms([&] { (void)one_hot(indices, w); }, 3, 3.0);
    bool repeatable = true;
    for (int r = 0; r < 10; ++r) repeatable = repeatable && same_bits(scatter(table, indices, w)[0], reference);
    std::printf(
        "%d thread(s): scatter_add min %.3f ms, median %.3f ms (%zu calls); one-hot matmul min %.1f ms, "
        "median %.1f ms (%zu calls); one-hot / scatter (medians) %.0fx; scatter bits repeatable: %s\n",
        threads, s.min_ms, s.median_ms, s.reps, o.min_ms, o.median_ms, o.reps, o.median_ms / s.median_ms,
        repeatable ? "yes" : "NO");
  }
  fx::set_num_threads(all);
  std::vector<double> a = reference.to_doubles(), b = one_hot(indices, w).to_doubles();
  double worst = 0;
  for (size_t k = 0; k < a.size(); ++k) worst = std::max(worst, std::abs(a[k] - b[k]));
  std::printf("largest |scatter - one-hot| over the gradient: %.3g\n", worst);
  return worst < 1e-4 ? 0 : 1;
}
