// fluxion_vmap_bench: per-example gradients of W3's MLP (h = tanh(W1 x + b1), y = W2 h + b2,
// loss = sum(y*y); W1 32x784, W2 10x32) for 128 examples on the CPU backend, at 1 thread:
// vmap(grad(loss)) over the examples in one compiled call, against 128 calls of the
// single-example gradient. Prints min and median milliseconds of each, their ratio (the target:
// the vmapped call at least 10x faster), and the largest difference between the two.
#include <fluxion/fluxion.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "cpu_target.h"
#include "timing.h"

namespace fx = fluxion;

namespace {

constexpr int64_t kExamples = 128, kIn = 784, kHidden = 32, kOut = 10;

fx::Tensor loss(const std::vector<fx::Tensor>& p, const fx::Tensor& x) {
  fx::Tensor h = fx::tanh(fx::matmul(p[0], x) + p[1]);
  fx::Tensor y = fx::matmul(p[2], h) + p[3];
  return fx::sum(y * y);
}

struct Timing {
  double min_ms = 0, median_ms = 0;
};

template <class F>
Timing time_ms(F f) {
  std::vector<double> ts = bench::call_times_us(f, 2, 10, 2.0);
  return {ts.front() / 1e3, ts[ts.size() / 2] / 1e3};
}

}  // namespace

int main() {
  std::printf("%s\n", bench::cpu_target_line().c_str());
  fx::set_num_threads(1);
  std::vector<fx::Array> params = {fx::Array(bench::lcg_values(kHidden * kIn, 1), {kHidden, kIn}),
                                   fx::Array(bench::lcg_values(kHidden, 2), {kHidden, 1}),
                                   fx::Array(bench::lcg_values(kOut * kHidden, 3), {kOut, kHidden}),
                                   fx::Array(bench::lcg_values(kOut, 4), {kOut, 1})};
  std::vector<float> xv = bench::lcg_values(kExamples * kIn, 5);
  fx::Array xs(xv, {kExamples, kIn, 1});
  std::vector<fx::Array> examples;
  for (int64_t e = 0; e < kExamples; ++e) {
    examples.emplace_back(std::vector<float>(xv.begin() + e * kIn, xv.begin() + (e + 1) * kIn), fx::Shape{kIn, 1});
  }

  auto batched = fx::jit([](const std::vector<fx::Tensor>& p, const fx::Tensor& x) {
    return fx::vmap(fx::grad(loss), {fx::none, 0})(p, x);
  });
  auto single = fx::jit([](const std::vector<fx::Tensor>& p, const fx::Tensor& x) { return fx::grad(loss)(p, x); });

  std::vector<fx::Array> got = batched(params, xs);
  double worst = 0;
  for (int64_t e = 0; e < kExamples; ++e) {
    std::vector<fx::Array> want = single(params, examples[static_cast<size_t>(e)]);
    for (size_t k = 0; k < want.size(); ++k) {
      std::vector<float> g = got[k].to_vector<float>(), w = want[k].to_vector<float>();
      for (size_t i = 0; i < w.size(); ++i) {
        double d = std::abs(static_cast<double>(g[static_cast<size_t>(e) * w.size() + i]) - w[i]);
        worst = std::max(worst, d / std::max(1.0, std::abs(static_cast<double>(w[i]))));
      }
    }
  }

  Timing v = time_ms([&] { batched(params, xs); });
  Timing loop = time_ms([&] {
    for (const fx::Array& x : examples) single(params, x);
  });
  std::printf("per-example gradients of W3's MLP, %lld examples, 1 thread, ms\n", static_cast<long long>(kExamples));
  std::printf("%-34s min %9.3f  median %9.3f\n", "vmap(grad(loss)), one call", v.min_ms, v.median_ms);
  std::printf("%-34s min %9.3f  median %9.3f\n", "grad(loss), one call per example", loop.min_ms, loop.median_ms);
  std::printf("loop / vmap (median): %.1fx (target: at least 10x)\n", loop.median_ms / v.median_ms);
  std::printf("largest relative difference between the two: %.2e\n", worst);
  return worst < 1e-4 ? 0 : 1;
}
