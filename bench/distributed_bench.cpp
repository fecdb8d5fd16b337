// Jobs of several ranks (make bench-distributed; run under mpirun): Fluxion's rank-ordered
// all-reduce (inside a compiled program, and from the host) against MPI_Allreduce on the same
// arrays, then data-parallel training steps of two
// models at a fixed global batch, with the gradients in one bucket and in small ones, and the share
// of a step spent waiting for the exchanges. Every
// rank times the same fixed number of calls (a rank deciding its own count would leave the
// others waiting in a collective); rank 0 prints the minimum and median over repeats.
#include <fluxion/distributed.h>
#include <fluxion/jit.h>
#include <fluxion/nn.h>
#include <fluxion/ops.h>
#include <fluxion/runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/models.h"

namespace fx = fluxion;
namespace nn = fluxion::nn;
namespace dist = fluxion::distributed;

namespace {

struct Timing {
  double min_us = 0, median_us = 0;
};

// `repeats` timings of `calls` calls of fn each (after one warm-up repeat), per call, started
// together on every rank.
Timing measure(int repeats, int calls, const std::function<void()>& fn) {
  for (int i = 0; i < calls; ++i) fn();
  std::vector<double> us;
  for (int r = 0; r < repeats; ++r) {
    dist::barrier();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) fn();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls);
  }
  std::sort(us.begin(), us.end());
  return {us.front(), us[us.size() / 2]};
}

void all_reduce_table(int repeats) {
  int n = dist::size();
  if (n == 1) return;  // one rank's all-reduce is a copy
  if (dist::rank() == 0) {
    std::printf(
        "\nall-reduce (sum) of f32 arrays on %d ranks, min (median) us: Fluxion inside a compiled program and\n"
        "from the host (which first checks that the ranks' dtypes and shapes agree), against MPI_Allreduce\n",
        n);
    std::printf("%10s %16s %16s %16s %8s %12s\n", "bytes", "in program", "host", "MPI", "ratio", "GB/s (bus)");
  }
  for (int64_t elements : {int64_t{1} << 10, int64_t{1} << 14, int64_t{1} << 18, int64_t{1} << 22}) {
    std::vector<float> host(static_cast<size_t>(elements), 1.0f / static_cast<float>(dist::rank() + 1));
    fx::Array x(host, {elements});
    int calls = elements >= (int64_t{1} << 22) ? 3 : elements >= (int64_t{1} << 18) ? 20 : 200;
    fx::Compiled program = fx::compile_flat(
        [](const std::vector<fx::Tensor>& in) { return std::vector<fx::Tensor>{fx::all_reduce(in[0])}; }, {x.type()},
        fx::Backend::Cpu);
    std::vector<fx::Array> inputs{x}, outputs{fx::Array(fx::f32, {elements})};
    Timing ours = measure(repeats, calls, [&] { program.run_into(inputs, outputs); });
    Timing from_host = measure(repeats, calls, [&] { dist::all_reduce(x); });
    std::vector<float> raw = host;
    Timing mpi = measure(repeats, calls, [&] {
      MPI_Allreduce(MPI_IN_PLACE, raw.data(), static_cast<int>(elements), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    });
    // Bus bandwidth: the bytes each rank sends and receives in a reduce-scatter and all-gather.
    double bytes = static_cast<double>(elements) * 4.0;
    double bus = 2.0 * (n - 1) / n * bytes / (ours.median_us * 1e3);
    if (dist::rank() == 0) {
      std::printf("%10lld %7.1f (%6.1f) %7.1f (%6.1f) %7.1f (%6.1f) %7.2fx %12.2f\n",
                  static_cast<long long>(elements * 4), ours.min_us, ours.median_us, from_host.min_us,
                  from_host.median_us, mpi.min_us, mpi.median_us, ours.median_us / mpi.median_us, bus);
    }
  }
}

fx::Tensor cross_entropy(const fx::Tensor& out, const fx::Tensor& y) { return nn::softmax_cross_entropy(out, y); }

// Whether compiled programs overlap their exchanges with the computation (the library reads the
// same variable).
bool overlapping() {
  const char* v = std::getenv("FLUXION_ASYNC_COLLECTIVES");
  return !(v && std::string(v) == "0");
}

struct ModelCase {
  const char* name;
  std::function<nn::Model()> model;
};

// Steps of the samples' models (Fashion-MNIST-shaped inputs), the share of each step this rank
// spent waiting for its collectives, with the exchanges overlapping the computation or not
// (FLUXION_ASYNC_COLLECTIVES=0: run the binary again).
void training_table(int repeats, int64_t global_batch, fx::Backend backend) {
  int n = dist::size();
  if (global_batch % n != 0) return;
  int64_t local = global_batch / n;
  std::vector<ModelCase> models{{"MLP 784-128-10", [] { return samples::mlp_model(128); }},
                                {"LeNet-5", [] { return samples::lenet_model(); }},
                                {"LSTM 128", [] { return samples::rnn_model("lstm", 128); }}};
  if (dist::rank() == 0) {
    std::printf(
        "\ndata-parallel training step on %d rank(s) (%s), global batch %lld (%lld per rank), %d thread(s) per "
        "rank, exchanges %s the computation\n",
        n, fx::backend_name(backend), static_cast<long long>(global_batch), static_cast<long long>(local),
        fx::num_threads(), overlapping() ? "overlapping" : "after");
    std::printf("%-16s %-12s %16s %12s %10s\n", "model", "buckets", "step ms", "examples/s", "waiting");
  }
  fx::Shape shape{local, 1, 28, 28};
  std::vector<float> xv(static_cast<size_t>(fx::numel(shape)));
  for (size_t i = 0; i < xv.size(); ++i)
    xv[i] = static_cast<float>((i * 7919 + static_cast<size_t>(dist::rank()) * 31) % 255) / 255.0f;
  std::vector<int32_t> yv(static_cast<size_t>(local));
  for (size_t i = 0; i < yv.size(); ++i) yv[i] = static_cast<int32_t>((i + static_cast<size_t>(dist::rank())) % 10);
  fx::Array x(xv, shape), y(yv, {local});
  for (const ModelCase& m : models) {
    for (int64_t bucket : {int64_t{25} << 20, int64_t{64} << 10}) {
      nn::Trainer t(m.model(), cross_entropy, nn::sgd({.lr = 0.01}), backend,
                    {.data_parallel = true, .bucket_bytes = bucket});
      nn::TrainState s = t.init(1);
      constexpr int kCalls = 10;
      Timing step = measure(repeats, kCalls, [&] { t.step(s, x, y).item(); });
      // The waiting share of one more timed repeat.
      fx::reset_counters();
      Timing again = measure(1, kCalls, [&] { t.step(s, x, y).item(); });
      double waiting = static_cast<double>(fx::counters().collective_wait_ns) * 1e-3 / (2.0 * kCalls) / again.median_us;
      if (dist::rank() == 0) {
        std::printf("%-16s %-12s %7.2f (%6.2f) %12.0f %9.0f%%\n", m.name,
                    bucket > (int64_t{1} << 20) ? "one 25 MB" : "64 KB each", step.min_us / 1e3, step.median_us / 1e3,
                    static_cast<double>(global_batch) / (step.median_us * 1e-6), 100 * waiting);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 7;
  int64_t batch = 256;
  std::string backend = "cpu";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--repeats") repeats = std::atoi(argv[i + 1]);
    else if (flag == "--batch") batch = std::atoll(argv[i + 1]);
    else if (flag == "--backend") backend = argv[i + 1];
    else {
      std::fprintf(stderr,
                   "usage: mpirun -np N fluxion_distributed_bench [--repeats R] [--batch B] [--backend cpu|vulkan]\n");
      return 2;
    }
  }
  try {
    dist::init();
    // The machine's cores shared among the ranks on it (all of them on one machine here).
    int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    fx::set_num_threads(std::max(1, cores / dist::size()));
    all_reduce_table(repeats);
    training_table(repeats, batch, backend == "vulkan" ? fx::Backend::Vulkan : fx::Backend::Cpu);
  } catch (const fx::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
