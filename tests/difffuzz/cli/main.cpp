// fluxion_difffuzz: the differential fuzzer for longer campaigns than the test suite's fixed
// seed range (docs/reliability.md; `make fuzz-long` runs 10,000 programs). Checks programs
// first..first+count-1 on every backend, alone and vmapped, prints each failure shrunk, with its
// IR text, a progress line every --progress programs and a summary line at the end; exits 1
// when any failed.
//   fluxion_difffuzz [--first N] [--count N] [--max-steps N] [--progress N] [--print 1] [--dtype T]
// --print 1 prints each program before checking it (for a program that crashes the process).
// --dtype f16 or bf16 checks the programs with their float values in that dtype (check_halves)
// instead of in f64 (check and check_vmap).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "difffuzz/check.h"

namespace {

struct Options {
  uint64_t first = 1000, count = 1000;
  int max_steps = 8, print = 0;
  uint64_t progress = 100;
  fluxion::DType floats = fluxion::DType::f64;
};

bool parse(int argc, char** argv, Options& o) {
  if (argc % 2 == 0) return false;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--first") o.first = std::stoull(argv[i + 1]);
    else if (a == "--count") o.count = std::stoull(argv[i + 1]);
    else if (a == "--max-steps") o.max_steps = std::atoi(argv[i + 1]);
    else if (a == "--progress") o.progress = std::stoull(argv[i + 1]);
    else if (a == "--print") o.print = std::atoi(argv[i + 1]);
    else if (a == "--dtype" && std::string_view(argv[i + 1]) == "f16") o.floats = fluxion::DType::f16;
    else if (a == "--dtype" && std::string_view(argv[i + 1]) == "bf16") o.floats = fluxion::DType::bf16;
    else return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  namespace df = fluxion::difffuzz;
  Options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: fluxion_difffuzz [--first N] [--count N] [--max-steps N] [--progress N] [--print 1] "
                 "[--dtype f16|bf16]\n");
    return 2;
  }
  std::vector<fluxion::Backend> backends;
  for (fluxion::Backend b : fluxion::available_backends())
    if (b != fluxion::Backend::Interp) backends.push_back(b);
  auto start = std::chrono::steady_clock::now();
  auto summary = [&](uint64_t run, int failed) {
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("difffuzz: %llu programs, %d failures, %.0f s\n", static_cast<unsigned long long>(run), failed,
                seconds);
    std::fflush(stdout);
  };
  int failed = 0;
  for (uint64_t run = 1; run <= o.count; ++run) {
    uint64_t seed = o.first + run - 1;
    df::Spec spec = df::generate(seed, o.max_steps);
    if (o.floats != fluxion::DType::f64) spec = df::in_dtype(spec, o.floats);
    if (o.print) {
      std::printf("seed %llu:\n%s", static_cast<unsigned long long>(seed), spec.describe().c_str());
      std::fflush(stdout);
    }
    bool program_failed = false;
    std::vector<df::Check> checks = {df::check, df::check_vmap};
    if (o.floats != fluxion::DType::f64) checks = {df::check_halves};
    for (const df::Check& check : checks) {
      if (check(spec, backends).empty()) continue;
      program_failed = true;
      df::Spec small = df::shrink(spec, backends, check);
      std::printf("%s\n", df::report(small, check(small, backends)).c_str());
      std::fflush(stdout);
    }
    failed += program_failed;
    if (o.progress && run % o.progress == 0 && run < o.count) summary(run, failed);
  }
  summary(o.count, failed);
  return failed ? 1 : 0;
}
