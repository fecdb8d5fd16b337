// W1-W7 and gpt_train's training step at batch 16 and 256 on the Vulkan backend, with every
// argument in device memory before the first call (as the GPU peers keep theirs), for the GPU
// benchmark (bench/gpu/README.md); with --cpu-threads, W1-W7 and the step at batch 16 on the
// CPU backend instead, at each thread count (system "fluxion-cpu@N"), for the host's table
// beside PyTorch's. One line per cell, the format workload_peers.py prints too:
//   WL <tab> system <tab> workload <tab> mode <tab> median_us <tab> min_us <tab> first_ms
// usage: fluxion_gpu_bench [--time S] [--workloads W1,W2,...,GPT] [--cpu-threads 1,2,4,...]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fluxion/fluxion.h>
#include <fluxion/nn.h>

#include "common/gpt.h"
#include "harness.h"
#include "workloads.h"

namespace fx = fluxion;
namespace nn = fluxion::nn;

namespace {

// gpt_train's model (width 128, 4 heads, 4 blocks, context 64, 96 tokens) trained by
// nn::Trainer on four batches of random tokens, in turn, on `backend`.
bench::CaseSpec gpt_step(int64_t batch, fx::Backend backend) {
  std::string system = backend == fx::Backend::Cpu ? "fluxion-cpu" : "fluxion-vulkan";
  return {"GPT-b" + std::to_string(batch), system, "step", [batch, backend] {
            samples::GptOptions g;
            g.context = 64;
            g.vocab = 96;
            struct State {
              std::unique_ptr<nn::Trainer> trainer;
              nn::TrainState state;
              std::vector<std::pair<fx::Array, fx::Array>> data;
              fx::Array loss;
              size_t next = 0;
            };
            auto st = std::make_shared<State>();
            std::mt19937 rng(0);
            for (int b = 0; b < 4; ++b) {
              std::vector<int32_t> x(static_cast<size_t>(batch * g.context)), y(x.size());
              for (int32_t& v : x) v = static_cast<int32_t>(rng() % static_cast<uint32_t>(g.vocab));
              for (int32_t& v : y) v = static_cast<int32_t>(rng() % static_cast<uint32_t>(g.vocab));
              st->data.emplace_back(fx::Array(x, {batch, g.context}), fx::Array(y, {batch, g.context}));
            }
            st->trainer = std::make_unique<nn::Trainer>(
                samples::gpt_model(g),
                [](const fx::Tensor& o, const fx::Tensor& y) { return nn::softmax_cross_entropy(o, y); },
                samples::gpt_optimizer(1e-3, 0.1, 1.0, nn::Schedule()), backend);
            st->state = st->trainer->init(0);
            bench::Case c;
            c.run = [st] {
              const auto& [x, y] = st->data[st->next++ % st->data.size()];
              st->loss = st->trainer->step(st->state, x, y);
            };
            double start = bench::now_us();
            c.run();
            c.compile_ms = (bench::now_us() - start) / 1000;
            c.first_call_done = true;
            c.value = [st] { return st->loss.item(); };
            return c;
          }};
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

void print(const bench::CaseSpec& s, const std::string& system, const bench::Record& r) {
  std::printf("WL\t%s\t%s\t%s\t%.1f\t%.1f\t%.1f\n", system.c_str(), s.workload.c_str(), s.mode.c_str(), r.median_us,
              r.min_us, r.compile_ms.value_or(0));
  std::fflush(stdout);
}

void print_error(const bench::CaseSpec& s, const std::string& system, const std::exception& e) {
  std::printf("ERR\t%s\t%s\t%s\t%s\n", system.c_str(), s.workload.c_str(), s.mode.c_str(), e.what());
  std::fflush(stdout);
}

// Each CPU case compiled once, at the largest thread count, then measured at every thread
// count in turn (first_ms, the compile, is that one compile on every count's line).
void cpu_table(const std::vector<bench::CaseSpec>& specs, const std::vector<int>& threads,
               const bench::MeasureOptions& mo) {
  for (const bench::CaseSpec& s : specs) {
    try {
      fx::set_num_threads(*std::max_element(threads.begin(), threads.end()));
      bench::Case c = s.make();
      for (int n : threads) {
        fx::set_num_threads(n);
        std::string system = s.system + "@" + std::to_string(n);
        try {
          print(s, system, bench::measure(s, c, n, mo));
        } catch (const std::exception& e) {
          print_error(s, system, e);
        }
      }
    } catch (const std::exception& e) {
      print_error(s, s.system, e);
    }
  }
}

}  // namespace

int main(int argc, char** argv) try {
  bench::MeasureOptions mo;
  mo.target_s = 0.3;
  std::set<std::string> wanted;
  std::vector<int> cpu_threads;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--time" && i + 1 < argc) {
      mo.target_s = std::atof(argv[++i]);
    } else if (a == "--workloads" && i + 1 < argc) {
      for (const std::string& w : split(argv[++i])) wanted.insert(w);
    } else if (a == "--cpu-threads" && i + 1 < argc) {
      for (const std::string& n : split(argv[++i])) cpu_threads.push_back(std::max(1, std::atoi(n.c_str())));
    } else {
      std::fprintf(stderr,
                   "usage: fluxion_gpu_bench [--time S] [--workloads W1,W2,...,GPT] [--cpu-threads 1,2,4,...]\n");
      return 2;
    }
  }
  mo.warmup_s = mo.target_s / 10;
  mo.min_reps = 3;
  const bench::Inputs inputs = bench::make_inputs();  // the cases read it when they are made
  std::vector<bench::CaseSpec> specs;
  if (cpu_threads.empty()) {
    specs = bench::fluxion_cases(inputs, "vulkan", 0, true);
    specs.push_back(gpt_step(16, fx::Backend::Vulkan));
    specs.push_back(gpt_step(256, fx::Backend::Vulkan));
  } else {
    specs = bench::fluxion_cases(inputs, "cpu", 0);
    specs.push_back(gpt_step(16, fx::Backend::Cpu));
  }
  std::erase_if(specs, [&](const bench::CaseSpec& s) {
    std::string family = s.workload.rfind("GPT", 0) == 0 ? "GPT" : s.workload;
    return !wanted.empty() && !wanted.count(family);
  });
  if (!cpu_threads.empty()) {
    cpu_table(specs, cpu_threads, mo);
    return 0;
  }
  for (const bench::CaseSpec& s : specs) {
    try {
      bench::Case c = s.make();
      print(s, s.system, bench::measure(s, c, 1, mo));
    } catch (const std::exception& e) {
      print_error(s, s.system, e);
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fluxion_gpu_bench: %s\n", e.what());
  return 1;
}
