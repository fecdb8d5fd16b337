// W1-W7 and gpt_train's training step at batch 16 and 256 on the Vulkan backend, with every
// argument in device memory before the first call (as the GPU peers keep theirs), for the GPU
// benchmark (bench/gpu/README.md). One line per cell, the format workload_peers.py prints too:
//   WL <tab> system <tab> workload <tab> mode <tab> median_us <tab> min_us <tab> first_ms
// usage: fluxion_gpu_bench [--time S] [--workloads W1,W2,...,GPT]
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
// nn::Trainer on four batches of random tokens, in turn.
bench::CaseSpec gpt_step(int64_t batch) {
  return {"GPT-b" + std::to_string(batch), "fluxion-vulkan", "step", [batch] {
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
                samples::gpt_optimizer(1e-3, 0.1, 1.0, nn::Schedule()), fx::Backend::Vulkan);
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

std::set<std::string> split(const std::string& list) {
  std::set<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.insert(item);
  return out;
}

}  // namespace

int main(int argc, char** argv) try {
  bench::MeasureOptions mo;
  mo.target_s = 0.3;
  std::set<std::string> wanted;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--time" && i + 1 < argc) {
      mo.target_s = std::atof(argv[++i]);
    } else if (a == "--workloads" && i + 1 < argc) {
      wanted = split(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: fluxion_gpu_bench [--time S] [--workloads W1,W2,...,GPT]\n");
      return 2;
    }
  }
  mo.warmup_s = mo.target_s / 10;
  mo.min_reps = 3;
  const bench::Inputs inputs = bench::make_inputs();  // the cases read it when they are made
  std::vector<bench::CaseSpec> specs = bench::fluxion_cases(inputs, "vulkan", 0, true);
  specs.push_back(gpt_step(16));
  specs.push_back(gpt_step(256));
  for (const bench::CaseSpec& s : specs) {
    std::string family = s.workload.rfind("GPT", 0) == 0 ? "GPT" : s.workload;
    if (!wanted.empty() && !wanted.count(family)) continue;
    try {
      bench::Case c = s.make();
      bench::Record r = bench::measure(s, c, 1, mo);
      std::printf("WL\t%s\t%s\t%s\t%.1f\t%.1f\t%.1f\n", s.system.c_str(), s.workload.c_str(), s.mode.c_str(),
                  r.median_us, r.min_us, r.compile_ms.value_or(0));
    } catch (const std::exception& e) {
      std::printf("ERR\t%s\t%s\t%s\t%s\n", s.system.c_str(), s.workload.c_str(), s.mode.c_str(), e.what());
    }
    std::fflush(stdout);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "fluxion_gpu_bench: %s\n", e.what());
  return 1;
}
