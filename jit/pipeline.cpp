#include "jit/pipeline.h"

#include <cstdio>
#include <string>

#include "jit/compile_cache.h"
#include "kernel/plan_rules.h"
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

}  // namespace

CompiledProgram compile(ir::Program traced, Backend backend) {
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
  out.executable = cached_compile(key, [&] { return ExecutablePtr(backends::compile(out.optimized, backend)); });
  out.traced = std::move(traced);
  return out;
}

}  // namespace fluxion::driver
