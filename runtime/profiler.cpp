// Profiling totals, the table and the Chrome trace (fluxion/profile.h).
#include "runtime/profiler.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>

#include "fluxion/error.h"
#include "fluxion/profile.h"
#include "support/files.h"
#include "support/settings.h"

namespace fluxion {
namespace {

struct Event {
  std::string name;
  double start_us, duration_us;
};

struct Store {
  std::mutex mu;
  std::map<std::string, KernelTime> totals;
  std::vector<Event> last_call;
  std::set<std::string> untimed;  // why calls went untimed (a device without timestamps)
  std::deque<CompileTime> compiles;
};

constexpr size_t kMaxCompiles = 1000;

Store& store() {
  static auto* s = new Store();  // used from an atexit handler: never destroyed
  return *s;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

void print_at_exit() {
  std::fprintf(stderr, "%s", kernel_time_table().c_str());
  std::string v = support::text(support::Setting::profile);  // "on", or a file name ending in .json
  if (v.ends_with(".json")) {
    try {
      write_chrome_trace(v);
      std::fprintf(stderr, "Chrome trace written to %s\n", v.c_str());
    } catch (const Error& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
  }
}

std::atomic<bool>& enabled() {
  static std::atomic<bool> on = [] {
    if (!support::enabled(support::Setting::profile)) return false;
    std::atexit(print_at_exit);
    return true;
  }();
  return on;
}

}  // namespace

void set_profiling(bool on) { enabled() = on; }
bool profiling() { return enabled(); }

std::vector<KernelTime> kernel_times() {
  std::lock_guard<std::mutex> lock(store().mu);
  std::vector<KernelTime> out;
  for (const auto& [name, t] : store().totals) out.push_back(t);
  std::sort(out.begin(), out.end(), [](const KernelTime& a, const KernelTime& b) { return a.total_us > b.total_us; });
  return out;
}

std::string kernel_time_table() {
  std::vector<KernelTime> ts = kernel_times();
  double sum = 0;
  for (const KernelTime& t : ts) sum += t.total_us;
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof line, "%-60s %10s %12s %10s %6s %9s %8s\n", "kernel", "calls", "total us", "mean us",
                "share", "GB/s", "TFLOP/s");
  out << line;
  // A rate over the kernel's whole time: bytes per microsecond / 1e3 is GB/s, FLOPs / 1e6 TFLOP/s;
  // three significant digits below 100 (lavapipe's rates are thousandths of a GPU's).
  auto rate = [](double amount, double us, double scale) {
    if (amount <= 0 || us <= 0) return std::string("-");
    double r = amount / us / scale;
    char text[32];
    std::snprintf(text, sizeof text, r >= 100 ? "%.0f" : "%.3g", r);
    return std::string(text);
  };
  for (const KernelTime& t : ts) {
    std::string name = t.name.size() > 60 ? t.name.substr(0, 57) + "..." : t.name;
    std::snprintf(line, sizeof line, "%-60s %10llu %12.1f %10.2f %5.1f%% %9s %8s\n", name.c_str(),
                  static_cast<unsigned long long>(t.calls), t.total_us, t.mean_us,
                  sum > 0 ? 100 * t.total_us / sum : 0.0, rate(t.bytes, t.total_us, 1e3).c_str(),
                  rate(t.flops, t.total_us, 1e6).c_str());
    out << line;
  }
  std::snprintf(line, sizeof line, "%-60s %10s %12.1f\n", "total", "", sum);
  out << line;
  std::lock_guard<std::mutex> lock(store().mu);
  for (const std::string& why : store().untimed) out << "not timed: " << why << "\n";
  for (const CompileTime& c : store().compiles) out << "compiled " << runtime::compile_text(c) << "\n";
  return out.str();
}

void reset_kernel_times() {
  std::lock_guard<std::mutex> lock(store().mu);
  store().totals.clear();
  store().last_call.clear();
  store().untimed.clear();
  store().compiles.clear();
}

std::vector<CompileTime> compile_times() {
  std::lock_guard<std::mutex> lock(store().mu);
  return {store().compiles.begin(), store().compiles.end()};
}

void write_chrome_trace(const std::string& path) {
  std::ostringstream json;
  {
    std::lock_guard<std::mutex> lock(store().mu);
    json << "{\"traceEvents\": [\n";
    for (size_t i = 0; i < store().last_call.size(); ++i) {
      const Event& e = store().last_call[i];
      json << (i ? ",\n" : "") << "{\"name\": \"" << escape(e.name)
           << "\", \"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": " << e.start_us << ", \"dur\": " << e.duration_us
           << "}";
    }
    json << "\n], \"displayTimeUnit\": \"ns\"}\n";
  }
  support::write_file_atomically(path, json.str(), "write_chrome_trace");
}

namespace runtime {

void report_profile(const std::vector<TimedDispatch>& dispatches) {
  std::lock_guard<std::mutex> lock(store().mu);
  store().last_call.clear();
  for (const TimedDispatch& d : dispatches) {
    KernelTime& t = store().totals[*d.name];
    t.name = *d.name;
    t.calls++;
    t.total_us += d.duration_us;
    t.mean_us = t.total_us / static_cast<double>(t.calls);
    t.bytes += d.bytes;
    t.flops += d.flops;
    store().last_call.push_back({*d.name, d.start_us, d.duration_us});
  }
}

std::string compile_text(const CompileTime& c) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.2f", c.seconds);
  std::string out =
      c.program + " for " + c.backend + " in " + seconds + " s: " + std::to_string(c.kernels) + " kernels";
  if (c.compiled > 0)
    out += ", " + std::to_string(c.compiled) + (c.compiled == 1 ? " module" : " modules") + " compiled on " +
           std::to_string(c.threads) + (c.threads == 1 ? " thread" : " threads");
  return out;
}

void report_compile(CompileTime compile) {
  std::lock_guard<std::mutex> lock(store().mu);
  if (store().compiles.size() == kMaxCompiles) store().compiles.pop_front();
  store().compiles.push_back(std::move(compile));
}

void report_untimed(const std::string& why) {
  std::lock_guard<std::mutex> lock(store().mu);
  store().untimed.insert(why);
}

}  // namespace runtime
}  // namespace fluxion
