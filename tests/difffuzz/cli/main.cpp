// fluxion_difffuzz: the differential fuzzer for longer campaigns than the test suite's fixed
// seed range (docs/reliability.md). Checks programs first..first+count-1 on every backend, alone
// and vmapped, and prints each failure shrunk, with its IR text; exits 1 when any failed.
//   fluxion_difffuzz [--first N] [--count N] [--max-steps N] [--print 1]
// --print 1 prints each program before checking it (for a program that crashes the process).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "difffuzz/check.h"

int main(int argc, char** argv) {
  namespace df = fluxion::difffuzz;
  uint64_t first = 1000, count = 1000;
  int max_steps = 8, print = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--first") first = std::stoull(argv[i + 1]);
    else if (a == "--count") count = std::stoull(argv[i + 1]);
    else if (a == "--max-steps") max_steps = std::atoi(argv[i + 1]);
    else if (a == "--print") print = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: fluxion_difffuzz [--first N] [--count N] [--max-steps N] [--print 1]\n");
      return 2;
    }
  }
  std::vector<fluxion::Backend> backends;
  for (fluxion::Backend b : fluxion::available_backends())
    if (b != fluxion::Backend::Interp) backends.push_back(b);
  int failed = 0;
  for (uint64_t seed = first; seed < first + count; ++seed) {
    df::Spec spec = df::generate(seed, max_steps);
    if (print) {
      std::printf("seed %llu:\n%s", static_cast<unsigned long long>(seed), spec.describe().c_str());
      std::fflush(stdout);
    }
    for (df::Check check : {df::check, df::check_vmap}) {
      if (check(spec, backends).empty()) continue;
      ++failed;
      df::Spec small = df::shrink(spec, backends, check);
      std::printf("%s\n", df::report(small, check(small, backends)).c_str());
      std::fflush(stdout);
    }
  }
  std::printf("difffuzz: %llu programs, %d failed\n", static_cast<unsigned long long>(count), failed);
  return failed ? 1 : 0;
}
