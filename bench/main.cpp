// fluxion_bench: W1..W7 (WORKLOADS.md) on the hand-written floor, libtorch and Fluxion, side by
// side in one process, at one or more thread counts. Prints a table per thread count (and the
// speed-ups when there are several) and writes JSON (bench/README.md).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "report.h"
#include "workloads.h"

namespace {

struct Options {
  std::vector<int> threads{1};
  std::string backend = "cpu";
  bool quick = false;
  double target_s = 0;  // 0: 0.5 s per cell, 0.05 s with --quick
  std::string json;
  bool append = false;
  std::set<std::string> workloads, systems;  // empty: all
};

std::set<std::string> split(const std::string& s) {
  std::set<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.insert(item);
  return out;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(
      stderr,
      "fluxion_bench: %s\n"
      "usage: fluxion_bench [--threads N|all[,N|all...]] [--backend cpu|interp|vulkan] [--quick] [--time SECONDS]\n"
      "                     [--json PATH [--append]] [--workloads W1,W3,...]\n"
      "                     [--systems handwritten,libtorch,fluxion]\n",
      why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--threads") {
      o.threads.clear();
      std::stringstream list(value());
      for (std::string v; std::getline(list, v, ',');) {
        int n = v == "all" ? static_cast<int>(std::thread::hardware_concurrency()) : std::atoi(v.c_str());
        if (n < 1) usage("--threads takes positive numbers or 'all', comma-separated");
        if (std::find(o.threads.begin(), o.threads.end(), n) == o.threads.end()) o.threads.push_back(n);
      }
      if (o.threads.empty()) usage("--threads takes positive numbers or 'all', comma-separated");
    } else if (a == "--backend") {
      o.backend = value();
    } else if (a == "--quick") {
      o.quick = true;
    } else if (a == "--time") {
      o.target_s = std::atof(value().c_str());
      if (!(o.target_s > 0)) usage("--time takes a positive number of seconds");
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--append") {
      o.append = true;
    } else if (a == "--workloads") {
      o.workloads = split(value());
    } else if (a == "--systems") {
      o.systems = split(value());
    } else {
      usage(("unknown argument " + a).c_str());
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bench;
  Options o = parse(argc, argv);
  MeasureOptions mo;
  mo.target_s = o.target_s > 0 ? o.target_s : o.quick ? 0.05 : 0.5;
  mo.warmup_s = mo.target_s / 10;
  mo.min_reps = o.quick ? 2 : 5;
  int cache_samples = o.quick ? 2 : 5;

  // compile_ms is meant to time a real compile: no on-disk cache of compiled code unless the
  // environment asks for it.
  setenv("FLUXION_DISK_CACHE", "0", /*overwrite=*/0);

  Inputs in = make_inputs();
  auto wanted = [&](const std::string& family) { return o.systems.empty() || o.systems.count(family); };
  auto keep = [&](std::vector<CaseSpec> all) {
    std::vector<CaseSpec> out;
    for (CaseSpec& s : all)
      if (o.workloads.empty() || o.workloads.count(s.workload)) out.push_back(std::move(s));
    // Workload by workload, so that each workload's systems run close together in time.
    std::stable_sort(out.begin(), out.end(),
                     [](const CaseSpec& a, const CaseSpec& b) { return a.workload < b.workload; });
    return out;
  };
  std::vector<Record> records;
  auto run = [&](const std::vector<CaseSpec>& specs, int threads) {
    std::fprintf(stderr, "fluxion_bench: %d thread(s), %zu cells, about %.2g s each\n", threads, specs.size(),
                 mo.target_s);
    for (const CaseSpec& s : specs) {
      std::fprintf(stderr, "  %s %-14s %-6s ", s.workload.c_str(), s.system.c_str(), s.mode.c_str());
      try {
        Case c = s.make();
        Record r = measure(s, c, threads, mo);
        std::fprintf(stderr, "median %.1f us  min %.1f us  (%lld reps)\n", r.median_us, r.min_us,
                     static_cast<long long>(r.reps));
        records.push_back(std::move(r));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "skipped: %s\n", e.what());
      }
    }
  };
  // Fluxion first at every thread count, then the peers: their OpenMP and OpenBLAS threads spin
  // after their parallel regions and would take cores from whatever runs next.
  if (wanted("fluxion")) {
    try {
      std::vector<CaseSpec> specs = keep(fluxion_cases(in, o.backend, cache_samples));
      for (int t : o.threads) {
        fluxion_set_threads(t);
        run(specs, t);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fluxion: skipped: %s\n", e.what());
    }
  }
  std::vector<CaseSpec> peers;
  if (wanted("handwritten")) peers = keep(handwritten_cases(in));
  if (wanted("libtorch")) {
    for (CaseSpec& s : keep(libtorch_cases(in))) peers.push_back(std::move(s));
  }
  for (int t : o.threads) {
    handwritten_set_threads(t);  // OpenBLAS too, which libtorch's matmuls also call
    libtorch_set_threads(t);
    run(peers, t);
  }

  for (int t : o.threads) {
    std::vector<Record> at;
    for (const Record& r : records)
      if (r.threads == t) at.push_back(r);
    print_table(at, check_agreement(at));
  }
  if (o.threads.size() > 1) print_speedups(records, o.threads);
  if (!o.json.empty() && !write_json(o.json, records, o.append)) return 1;
  return 0;
}
