#include "jit/pipeline.h"

#include <chrono>
#include <cstdio>
#include <source_location>
#include <string>

#include "fluxion/error.h"
#include "jit/compile_cache.h"
#include "kernel/plan_rules.h"
#include "runtime/host_memory.h"
#include "runtime/profiler.h"
#include "support/settings.h"
#include "transforms/passes/passes.h"

namespace fluxion::driver {
namespace {

// Verifies (in builds with FLUXION_VERIFY_IR) and optionally dumps the program after a step.
void checkpoint(const ir::Program& p, const char* step) {
#ifdef FLUXION_VERIFY_IR
  ir::verify(p);
#endif
  if (support::enabled(support::Setting::dump_ir)) {
    std::fprintf(stderr, "// ---- IR after %s\n%s\n", step, ir::print(p, true).c_str());
  }
}

// The program's name and where it comes from: the line it was traced from and, where a library
// function the user called compiled it (a Trainer's step), that call's line, since the trace's
// own lines are then the library's.
std::string program_name(const ir::Program& p) {
  std::string where = runtime::traced_from(p);  // " (traced from f.cpp:12)" or ""
  const std::source_location* site = detail::CallSite::report(nullptr);
  if (site && site->line() != 0) {
    std::string called = "called from " + std::string(site->file_name()) + ":" + std::to_string(site->line()) + ")";
    where = where.empty() ? " (" + called : where.substr(0, where.size() - 1) + ", " + called;
  }
  return "program @" + p.name + where;
}

// Records a compile for fluxion::compile_times() and, when it took long, says so on stderr: a
// user waiting for a large model's first step should know that it is compiling.
void report(const ir::Program& p, Backend backend, const backends::Executable& e, double seconds) {
  runtime::CompileSummary summary = e.compile_summary();
  CompileTime c{program_name(p), backend_name(backend), seconds, summary.kernels, summary.compiled, summary.threads};
  if (support::enabled(support::Setting::compile_notices) &&
      seconds >= support::seconds(support::Setting::compile_notice_seconds)) {
    std::fprintf(stderr, "fluxion: compiled %s (FLUXION_COMPILE_NOTICES=off hides this line)\n",
                 runtime::compile_text(c).c_str());
  }
  runtime::report_compile(std::move(c));
}

}  // namespace

CompiledProgram compile(ir::Program traced, Backend backend) {
  auto start = std::chrono::steady_clock::now();
  CompiledProgram out;
  checkpoint(traced, "trace");
  out.optimized = traced;
  passes::simplify(out.optimized);
  checkpoint(out.optimized, "simplify");
  // One node order per graph, whatever order the trace recorded independent nodes in: the
  // cache key, the backend's compilation and the printed IR then depend on the graph alone.
  ir::canonicalize_order(out.optimized);
  checkpoint(out.optimized, "canonical order");
  // Plan rules and the backend's settings read at each compile change the code of the same
  // graph, so they are part of it.
  std::string key = std::string(backend_name(backend)) + "\n" + backends::compile_settings(backend) +
                    kernel::plan_rules_text() + ir::print(out.optimized);
  bool compiled = false;
  out.executable = cached_compile(key, [&] {
    compiled = true;
    return ExecutablePtr(backends::compile(out.optimized, backend));
  });
  if (compiled) {
    report(out.optimized, backend, *out.executable,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  out.traced = std::move(traced);
  return out;
}

}  // namespace fluxion::driver
