// The program of workload W7 (docs/performance.md): a scalar state updated 8000 times by a
// tiny network, s = sigmoid(softplus(w2) . sigmoid(s * softplus(w1))) + noise[i]. Times the
// forward pass and its gradient with respect to w1 and w2 through all steps, and prints the
// host round trips per call: one, whatever the number of steps, because the loop runs inside
// the compiled program.
#include <fluxion/fluxion.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common/cli.h"

namespace fx = fluxion;
using fx::Tensor;

namespace {

Tensor final_state(const Tensor& w1, const Tensor& w2, const Tensor& noise) {
  Tensor k1 = fx::softplus(w1), k2 = fx::softplus(w2);
  auto [s, unused] = fx::scan(
      [&](const Tensor& st, const Tensor& n) {
        return std::make_pair(fx::sigmoid(fx::dot(k2, fx::sigmoid(st * k1))) + n, std::tuple<>{});
      },
      fx::scalar(0.5), noise);
  return s;
}

struct Timing {
  double min_us = 0, median_us = 0, roundtrips = 0, kernels = 0;
};

template <class F>
Timing time_calls(F call, int64_t repeats) {
  call();  // compiles
  std::vector<double> us;
  fx::reset_counters();
  for (int64_t r = 0; r < repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  fx::RuntimeCounters c = fx::counters();
  double n = static_cast<double>(repeats);
  return {us.front(), us[us.size() / 2], static_cast<double>(c.native_calls) / n,
          static_cast<double>(c.kernel_launches) / n};
}

}  // namespace

int main(int argc, char** argv) try {
  std::string backend_name = "cpu";
  int64_t steps = 8000, repeats = 20, threads = 1, seed = 0;
  samples::Cli cli("small_loop", "Workload W7: 8000 steps of a tiny recurrent update, forward and gradient.");
  cli.add_choice("--backend", &backend_name, {"cpu", "vulkan", "interp"}, "the backend that runs it");
  cli.add("--steps", &steps, "loop steps");
  cli.add("--repeats", &repeats, "timed calls of each program");
  cli.add("--threads", &threads, "CPU threads (0: all cores)");
  cli.add("--seed", &seed, "seed of w1, w2 and the noise");
  cli.parse(argc, argv);
  samples::TrainingOptions named;
  named.backend = backend_name;
  fx::Backend backend = named.backend_kind();
  if (threads > 0) fx::set_num_threads(static_cast<int>(threads));
  // The inputs, drawn once by the interpreter from the seed.
  auto inputs = fx::jit(
      [&]() {
        Tensor key = fx::random::key(static_cast<uint64_t>(seed));
        return std::make_tuple(fx::random::uniform(fx::random::fold_in(key, 0), {12}, fx::f32, -1, 1),
                               fx::random::uniform(fx::random::fold_in(key, 1), {12}, fx::f32, -1, 1),
                               fx::random::uniform(fx::random::fold_in(key, 2), {steps}, fx::f32, -0.01, 0.01));
      },
      fx::Backend::Interp)();
  auto [w1, w2, noise] = inputs;
  auto forward = fx::jit(final_state, backend);
  auto gradient = fx::jit(fx::value_and_grad(final_state, {0, 1}), backend);
  fx::Array s = forward(w1, w2, noise);
  auto [value, grads] = gradient(w1, w2, noise);
  std::printf("small_loop on %s: %lld steps\nfinal s = %.6f\nd s / d w1[0..2] = %.6g %.6g %.6g\n",
              fx::backend_name(backend), static_cast<long long>(steps), s.item(), grads[0].to_doubles()[0],
              grads[0].to_doubles()[1], grads[0].to_doubles()[2]);
  Timing f = time_calls([&] { forward(w1, w2, noise).item(); }, repeats);
  Timing g = time_calls([&] { gradient(w1, w2, noise).first.item(); }, repeats);
  std::printf("%-9s %12s %12s %22s %18s\n", "", "min us", "median us", "host round trips/call", "kernels/call");
  std::printf("%-9s %12.1f %12.1f %22.2f %18.0f\n", "forward", f.min_us, f.median_us, f.roundtrips, f.kernels);
  std::printf("%-9s %12.1f %12.1f %22.2f %18.0f\n", "gradient", g.min_us, g.median_us, g.roundtrips, g.kernels);
  return 0;
} catch (const std::exception& e) {
  return samples::report_error("small_loop", e);
}
