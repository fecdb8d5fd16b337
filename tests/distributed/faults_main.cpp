// A job that goes wrong on purpose, for check_fault.cmake: every rank runs all-reduces, and at
// the sixth rank 1 stalls for a minute (`stall`), stops itself with SIGSTOP (`stop`) or dies
// with SIGKILL (`kill`). The job must end, with a non-zero status, instead of hanging.
#include <fluxion/distributed.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  namespace dist = fluxion::distributed;
  std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "stall" && mode != "stop" && mode != "kill") {
    std::fprintf(stderr, "usage: fluxion_distributed_faults stall|stop|kill\n");
    return 2;
  }
  dist::init();
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
