// A Scatter kernel on a GPU (the sums of kernel/scatter_lowering.h). One invocation per
// column of the result (an outer index and a position after the axis) and block of its rows: it
// zeroes its rows of that column, then scans every index in order and adds the updates of those
// that land in its block. No two invocations write one element and each adds in index order, so
// the result is the same bits in every run and on every device, without atomics.
//
// Each block scans all the indices, so cutting rows into more blocks buys parallelism with work:
// the plan cuts them (plan.cpp, scatter_block_rows) only as far as it takes to reach the
// invocations it aims at, keeping the scans' work linear in the operands' and result's size.
#include <algorithm>

#include "backends/vulkan/glsl_renderer.h"
#include "kernel/scatter_lowering.h"
#include "support/round_up.h"

namespace fluxion::vulkan {
void GlslKernel::scatter_column(const std::string& column, const std::string& lo, const std::string& hi) {
  kernel::ScatterGeometry g = kernel::scatter_geometry(region_, region_.nodes[kernel_.root]);
  Renderer render(*this);
  std::string inner = std::to_string(std::max<int64_t>(1, g.inner));
  std::string a = declare("int", "a", "(" + column + ") / " + inner);
  std::string col = declare("int", "col", "(" + column + ") % " + inner);
  std::string c = fresh("c");
  line("for (int " + c + " = " + lo + "; " + c + " < " + hi + "; ++" + c + ") {");
  block([&] { kernel::scatter_zero(render, g, a, c, col); });
  line("}");
  kernel::scatter_scan(render, g, lo, hi, [&](const std::string& i, const std::string& row) {
    kernel::scatter_element(render, g, a, i, row, col);
  });
}

void GlslKernel::emit_scatter(bool cooperative) {
  kernel::ScatterGeometry g = kernel::scatter_geometry(region_, region_.nodes[kernel_.root]);
  int64_t columns = std::max<int64_t>(1, g.outer * g.inner);
  int64_t per_block = plan_.tile.m;
  int64_t blocks = std::max<int64_t>(1, support::ceil_div(g.rows, per_block));
  int64_t n = numel(kernel_.space) == 0 ? 0 : blocks * columns;
  std::string N = std::to_string(n), C = std::to_string(columns);
  // Consecutive invocations take consecutive columns: their loads and stores are adjacent.
  auto invocation = [&] {
    std::string lo = declare("int", "lo", "(gid / " + C + ") * " + std::to_string(per_block));
    std::string hi =
        declare("int", "hi", "min(" + lo + " + " + std::to_string(per_block) + ", " + std::to_string(g.rows) + ")");
    scatter_column("gid % " + C, lo, hi);
  };
  if (cooperative) {
    line("for (int gid = lid; gid < " + N + "; gid += " + std::to_string(plan_.workgroup) + ") {");
    block(invocation);
    line("}");
    return;
  }
  groups_ = grid(n, plan_.workgroup);
  line("int gid = " + invocation_index() + ";");
  line("if (gid >= " + N + ") return;");
  invocation();
}

}  // namespace fluxion::vulkan
