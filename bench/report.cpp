#include "report.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cpu_target.h"

namespace bench {
namespace {

std::string fmt(const char* f, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// Three significant digits or so, no exponent for the sizes met here.
std::string num(double v) {
  if (!std::isfinite(v)) return "-";
  double a = std::fabs(v);
  if (a == 0) return "0";
  if (a < 10) return fmt("%.2f", v);
  if (a < 100) return fmt("%.1f", v);
  return fmt("%.0f", v);
}
std::string num(const std::optional<double>& v) { return v ? num(*v) : "-"; }

std::string json_num(double v) { return std::isfinite(v) ? fmt("%.6g", v) : "null"; }
std::string json_num(const std::optional<double>& v) { return v ? json_num(*v) : "null"; }

const Record* find(const std::vector<Record>& rs, const std::string& w, const std::string& sys, const std::string& mode) {
  for (const Record& r : rs)
    if (r.workload == w && r.system == sys && r.mode == mode) return &r;
  return nullptr;
}

// The non-primal mode of a workload: "step" for W6, else "grad".
std::string diff_mode(const std::vector<Record>& rs, const std::string& w) {
  for (const Record& r : rs)
    if (r.workload == w && r.mode == "step") return "step";
  return "grad";
}

int system_rank(const std::string& s) {
  if (s == "handwritten") return 0;
  if (s == "libtorch") return 1;
  return 2;
}

double rel_diff(double a, double b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-30); }

}  // namespace

std::vector<std::string> check_agreement(const std::vector<Record>& records, double tolerance) {
  std::vector<std::string> out;
  for (const Record& r : records) {
    const Record* ref = find(records, r.workload, "handwritten", r.mode);
    if (!ref) ref = find(records, r.workload, "libtorch", r.mode);
    if (!ref || ref == &r) continue;
    double d = rel_diff(r.value, ref->value);
    if (!(d <= tolerance)) {
      out.push_back(fmt("%s %s: %s loss %.7g differs from %s %.7g (relative %.2g)", r.workload.c_str(),
                        r.mode.c_str(), r.system.c_str(), r.value, ref->system.c_str(), ref->value, d));
    }
    if (r.grad_norm && ref->grad_norm) {
      double g = rel_diff(*r.grad_norm, *ref->grad_norm);
      if (!(g <= tolerance)) {
        out.push_back(fmt("%s %s: %s gradient norm %.7g differs from %s %.7g (relative %.2g)", r.workload.c_str(),
                          r.mode.c_str(), r.system.c_str(), *r.grad_norm, ref->system.c_str(), *ref->grad_norm, g));
      }
    }
  }
  return out;
}

void print_table(const std::vector<Record>& records, const std::vector<std::string>& warnings) {
  if (records.empty()) return;
  std::printf("\n%s\n", cpu_target_line().c_str());
  std::printf(
      "threads: %d. Times in microseconds: median (min). Ratios of medians: g/p is grad over primal\n"
      "within a system; x hand and x torch: this system's time over handwritten's and libtorch's\n"
      "(primal, grad). W6's second mode is the training step. allocs: heap allocations per call\n"
      "(Fluxion, in parentheses: through Compiled::run_into with preallocated outputs); trips: host\n"
      "round trips per call; compile ms: the first call, which traces and compiles (*: it found the\n"
      "program in a compile cache); hit +us: what the first call of a fresh jit of the same program\n"
      "(a compile-cache hit) costs beyond a steady call.\n\n",
      records.front().threads);
  std::printf("%-3s %-15s %19s %21s %6s %13s %13s %22s %7s %15s %7s\n", "", "system", "primal", "grad/step",
              "g/p", "x hand", "x torch", "allocs", "trips", "compile ms", "hit +us");

  std::vector<std::string> workloads;
  std::set<std::string> seen;
  for (const Record& r : records)
    if (seen.insert(r.workload).second) workloads.push_back(r.workload);
  for (const std::string& w : workloads) {
    std::string dm = diff_mode(records, w);
    std::map<std::pair<int, std::string>, bool> systems;
    for (const Record& r : records)
      if (r.workload == w) systems[{system_rank(r.system), r.system}] = true;
    const Record* hp = find(records, w, "handwritten", "primal");
    const Record* hg = find(records, w, "handwritten", dm);
    const Record* tp = find(records, w, "libtorch", "primal");
    const Record* tg = find(records, w, "libtorch", dm);
    auto ratio = [](const Record* a, const Record* b) -> std::optional<double> {
      if (!a || !b || b->median_us <= 0) return std::nullopt;
      return a->median_us / b->median_us;
    };
    auto pair = [](const std::optional<double>& a, const std::optional<double>& b) {
      if (!a && !b) return std::string();
      return num(a) + ", " + num(b);
    };
    for (const auto& [key, unused] : systems) {
      const std::string& sys = key.second;
      const Record* p = find(records, w, sys, "primal");
      const Record* g = find(records, w, sys, dm);
      auto time = [](const Record* r) { return r ? num(r->median_us) + " (" + num(r->min_us) + ")" : std::string("-"); };
      std::string vs_hand = sys == "handwritten" ? "" : pair(ratio(p, hp), ratio(g, hg));
      std::string vs_torch = sys == "libtorch" ? "" : pair(ratio(p, tp), ratio(g, tg));
      std::optional<double> pa = p ? std::optional<double>(p->allocs_per_call) : std::nullopt;
      std::optional<double> ga = g ? std::optional<double>(g->allocs_per_call) : std::nullopt;
      std::string allocs = pair(pa, ga);
      if ((p && p->prealloc_allocs_per_call) || (g && g->prealloc_allocs_per_call))
        allocs += " (" + pair(p ? p->prealloc_allocs_per_call : std::nullopt, g ? g->prealloc_allocs_per_call : std::nullopt) + ")";
      std::string trips = pair(p ? p->host_roundtrips_per_call : std::nullopt, g ? g->host_roundtrips_per_call : std::nullopt);
      // The cache-hit call runs the program too: show what it costs beyond a steady call.
      std::string hit = g && g->cache_hit_us ? num(*g->cache_hit_us - g->median_us) : "-";
      auto compile_ms = [](const Record* r) {  // '*': the first call found a compiled program cached
        return !r || !r->compile_ms ? std::string("-") : num(*r->compile_ms) + (r->compile_cached.value_or(false) ? "*" : "");
      };
      std::string compile = p && p->compile_ms ? compile_ms(p) + ", " + compile_ms(g) : std::string();
      std::printf("%-3s %-15s %19s %21s %6s %13s %13s %22s %7s %15s %7s\n", w.c_str(), sys.c_str(), time(p).c_str(),
                  time(g).c_str(), num(ratio(g, p)).c_str(), vs_hand.c_str(), vs_torch.c_str(), allocs.c_str(),
                  trips.c_str(), compile.c_str(), hit.c_str());
    }
  }
  for (const std::string& w : warnings) std::printf("WARNING %s\n", w.c_str());
  std::printf("\n");
}

void print_speedups(const std::vector<Record>& records, const std::vector<int>& threads) {
  auto find = [&](const Record& like, int t) -> const Record* {
    for (const Record& r : records)
      if (r.workload == like.workload && r.system == like.system && r.mode == like.mode && r.threads == t) return &r;
    return nullptr;
  };
  std::printf("\nSpeed-up over %d thread(s): median microseconds, and in parentheses that median over this one\n\n",
              threads.front());
  std::printf("%-3s %-15s %-6s", "", "system", "mode");
  for (int t : threads) std::printf(" %20s", fmt("%d thread(s)", t).c_str());
  std::printf("\n");
  for (const Record& base : records) {
    if (base.threads != threads.front()) continue;
    std::printf("%-3s %-15s %-6s", base.workload.c_str(), base.system.c_str(), base.mode.c_str());
    for (int t : threads) {
      const Record* r = find(base, t);
      std::string cell = !r                     ? "-"
                         : t == threads.front() ? fmt("%.1f", r->median_us)
                                                : fmt("%.1f (%.2fx)", r->median_us, base.median_us / r->median_us);
      std::printf(" %20s", cell.c_str());
    }
    std::printf("\n");
  }
}

bool write_json(const std::string& path, const std::vector<Record>& records, bool append) {
  std::vector<std::string> lines;
  std::set<std::string> keys;  // "workload system mode threads" of this run
  auto key = [](const std::string& w, const std::string& s, const std::string& m, int t) {
    return fmt("{\"workload\": \"%s\", \"system\": \"%s\", \"mode\": \"%s\", \"threads\": %d,", w.c_str(), s.c_str(),
               m.c_str(), t);
  };
  for (const Record& r : records) keys.insert(key(r.workload, r.system, r.mode, r.threads));
  if (append) {  // keep the earlier records, which this function wrote one per line
    std::ifstream old(path);
    std::string line;
    while (std::getline(old, line)) {
      if (line.rfind("  {", 0) != 0) continue;
      line = line.substr(2);
      if (!line.empty() && line.back() == ',') line.pop_back();
      size_t cut = line.find(" \"median_us\"");
      if (cut == std::string::npos || keys.count(line.substr(0, cut))) continue;
      lines.push_back(line);
    }
  }
  for (const Record& r : records) {
    std::string s = key(r.workload, r.system, r.mode, r.threads);
    s += " \"median_us\": " + json_num(r.median_us) + ", \"min_us\": " + json_num(r.min_us);
    s += fmt(", \"reps\": %lld", static_cast<long long>(r.reps));
    s += ", \"allocs_per_call\": " + json_num(r.allocs_per_call);
    s += ", \"alloc_bytes_per_call\": " + json_num(r.alloc_bytes_per_call);
    s += ", \"host_roundtrips_per_call\": " + json_num(r.host_roundtrips_per_call);
    s += ", \"kernel_launches_per_call\": " + json_num(r.kernel_launches_per_call);
    s += ", \"compile_ms\": " + json_num(r.compile_ms);
    s += std::string(", \"compile_cached\": ") + (r.compile_cached ? (*r.compile_cached ? "true" : "false") : "null");
    s += ", \"cache_hit_us\": " + json_num(r.cache_hit_us);
    s += ", \"prealloc_median_us\": " + json_num(r.prealloc_median_us);
    s += ", \"prealloc_min_us\": " + json_num(r.prealloc_min_us);
    s += ", \"prealloc_allocs_per_call\": " + json_num(r.prealloc_allocs_per_call);
    s += ", \"value\": " + fmt("%.9g", r.value);
    s += ", \"grad_norm\": " + (r.grad_norm ? fmt("%.9g", *r.grad_norm) : std::string("null")) + "}";
    lines.push_back(s);
  }

  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "[\n";
    for (size_t i = 0; i < lines.size(); ++i) out << "  " << lines[i] << (i + 1 < lines.size() ? ",\n" : "\n");
    out << "]\n";
    out.close();
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::perror(("rename " + tmp + " -> " + path).c_str());
    return false;
  }
  return true;
}

}  // namespace bench
