// A job that goes wrong on purpose, for check_fault.cmake: every rank runs all-reduces, and at
// the sixth rank 1 stalls for a minute (`stall`), stops itself with SIGSTOP (`stop`) or dies
// with SIGKILL (`kill`); or rank 1 stalls before its sixth call of a compiled program with two
// all-reduces (`stall_program`: rank 0 waits in the program's first) or of a data-parallel
// training step (`stall_step`: rank 0 waits in the step's check that the ranks run the same
// program). The job must end, with a non-zero status, instead of hanging.
#include <fluxion/distributed.h>
#include <fluxion/jit.h>
#include <fluxion/nn.h>
#include <fluxion/ops.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  namespace dist = fluxion::distributed;
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "stall" && mode != "stop" && mode != "kill" && mode != "stall_step" && mode != "stall_program") {
    std::fprintf(stderr, "usage: fluxion_distributed_faults stall|stop|kill|stall_step|stall_program\n");
    return 2;
  }
  dist::init();
  if (mode == "stall_program") {
    fluxion::Compiled f = fluxion::compile_flat(
        [](const std::vector<fluxion::Tensor>& in) {
          return std::vector<fluxion::Tensor>{fluxion::all_reduce(fluxion::all_reduce(in[0]) * 2.0)};
        },
        {{fluxion::f32, {1000}}}, fluxion::Backend::Cpu);
    fluxion::Array x(std::vector<float>(1000, 1.0f), {1000});
    for (int step = 0; step < 100000; ++step) {
      if (dist::rank() == 1 && step == 5) std::this_thread::sleep_for(std::chrono::seconds(60));
      x = f.run({x})[0];
    }
    return 0;
  }
  if (mode == "stall_step") {
    namespace nn = fluxion::nn;
    nn::Trainer t(
        nn::Sequential{nn::Dense(4, 8), nn::Tanh(), nn::Dense(8, 2)},
        [](const fluxion::Tensor& out, const fluxion::Tensor& y) { return nn::softmax_cross_entropy(out, y); },
        nn::sgd(), fluxion::Backend::Cpu, {.data_parallel = true});
    nn::TrainState s = t.init(1);
    fluxion::Array x(std::vector<float>(8, 0.5f), {2, 4}), y(std::vector<int32_t>{0, 1}, {2});
    for (int step = 0; step < 100000; ++step) {
      if (dist::rank() == 1 && step == 5) std::this_thread::sleep_for(std::chrono::seconds(60));
      t.step(s, x, y);
    }
    return 0;
  }
  fluxion::Array x(std::vector<float>(1000, 1.0f), {1000});
  for (int step = 0; step < 100000; ++step) {
    if (dist::rank() == 1 && step == 5) {
      if (mode == "stall") std::this_thread::sleep_for(std::chrono::seconds(60));
      if (mode == "stop") std::raise(SIGSTOP);
      if (mode == "kill") std::raise(SIGKILL);
    }
    dist::all_reduce(x);
  }
  return 0;
}
