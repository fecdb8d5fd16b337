// A Scatter kernel on a GPU (the sums of kernel/scatter_lowering.h), in one of two plans.
//
// Row blocks: one invocation per column of the result (an outer index and a position after the
// axis) and block of its rows zeroes its rows of that column, then scans every index in order
// and adds the updates of those that land in its block. Each block scans all the indices, so
// cutting rows into more blocks buys parallelism with work: the plan cuts them (plan.cpp,
// scatter_block_rows) only as far as it takes to reach the invocations it aims at.
//
// Sorted rows, for many indices: one workgroup first writes the index order into the kernel's
// scratch (scatter_order_shader: a counting sort, stable within a row), then one invocation per
// result element sums its row's run of updates. Its work is the updates' size, not blocks x
// indices, and it adds exactly the updates the scan adds, in the same order.
//
// Either way no two invocations write one element and each adds in index order, so the result
// is the same bits in every run, on every device and in both plans, without atomic floats.
#include <algorithm>
#include <string>

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

void GlslKernel::emit_sorted_scatter() {
  kernel::ScatterGeometry g = kernel::scatter_geometry(region_, region_.nodes[kernel_.root]);
  Renderer render(*this);
  int64_t n = numel(kernel_.space);
  std::string rows = std::to_string(g.rows), inner = std::to_string(std::max<int64_t>(1, g.inner));
  groups_ = grid(n, plan_.workgroup);
  line("int gid = " + invocation_index() + ";");
  line("if (gid >= " + std::to_string(n) + ") return;");
  std::string a = declare("int", "a", "gid / (" + rows + " * " + inner + ")");
  std::string c = declare("int", "c", "(gid / " + inner + ") % " + rows);
  std::string col = declare("int", "col", "gid % " + inner);
  std::string lo = declare("int", "lo", "fx_ld_i32(fx_order, " + rows + " + " + c + ")");
  std::string hi = declare("int", "hi", "fx_ld_i32(fx_order, " + rows + " + " + c + " + 1)");
  std::string acc = declare(glsl_type(g.dtype), "acc", render.constant(g.dtype, 0));
  std::string k = fresh("k");
  line("for (int " + k + " = " + lo + "; " + k + " < " + hi + "; ++" + k + ") {");
  block([&] {
    std::string i = declare("int", "i", "fx_ld_i32(fx_order, " + std::to_string(2 * g.rows + 1) + " + " + k + ")");
    std::string x =
        render.at_flat(g.updates, kernel::scatter_position<Renderer, std::string>(render, a, i, col, g.count, g.inner));
    line(acc + " = " + render.add(acc, x, g.dtype) + ";");
  });
  line("}");
  render.store_flat(g.result, kernel::scatter_position<Renderer, std::string>(render, a, c, col, g.rows, g.inner), acc);
}

// A stable counting sort of the indices by clamped row, in one workgroup of `workgroup`
// invocations (arguments: guard, indices, order; words: indices, rows). Rows are counted with
// integer atomics (whose sums do not depend on their order), their runs laid out by a prefix
// sum, then the indices placed round by round, `workgroup` at a time: an index's place in its
// run is the run's cursor plus the indices of its round before it with the same row.
std::string scatter_order_shader(const ShaderTarget& target, int64_t workgroup) {
  std::string w = std::to_string(workgroup);
  return shader_prelude(target, true) + workgroup_layout(workgroup) + "shared int fx_keys[" + w +
         "];\nshared int fx_sums[" + w + "];\nconst int W = " + w + ";\n" + R"(
void fx_sync() {
  memoryBarrierBuffer();
  memoryBarrierShared();
  barrier();
}
void main() {
  if (!fx_guard()) return;
  FX_ADDR idx = fx_addr(1);
  FX_ADDR s = fx_addr(2);
  int n = int(fx_word(6)), rows = int(fx_word(7));
  int lid = int(gl_LocalInvocationID.x);
  for (int c = lid; c < rows; c += W) fx_st_i32(s, c, 0);
  fx_sync();
  for (int i = lid; i < n; i += W) fx_atomic_add_i32(s, clamp(fx_ld_i32(idx, i), 0, rows - 1), 1);
  fx_sync();
  int per = (rows + W - 1) / W;
  int lo = min(lid * per, rows), hi = min(lo + per, rows);
  int sum = 0;
  for (int c = lo; c < hi; ++c) sum += fx_ld_i32(s, c);
  fx_sums[lid] = sum;
  fx_sync();
  int start = 0;
  for (int j = 0; j < lid; ++j) start += fx_sums[j];
  for (int c = lo; c < hi; ++c) {
    int count = fx_ld_i32(s, c);
    fx_st_i32(s, c, start);
    fx_st_i32(s, rows + c, start);
    start += count;
  }
  if (lid == W - 1) fx_st_i32(s, 2 * rows, start);
  fx_sync();
  for (int t = 0; t < n; t += W) {
    int i = t + lid;
    int key = i < n ? clamp(fx_ld_i32(idx, i), 0, rows - 1) : -1;
    fx_keys[lid] = key;
    fx_sync();
    int rank = 0;
    bool last = key >= 0;
    for (int j = 0; key >= 0 && j < W; ++j) {
      if (fx_keys[j] == key) {
        if (j < lid) ++rank;
        if (j > lid) last = false;
      }
    }
    int at = key >= 0 ? fx_ld_i32(s, key) + rank : 0;
    fx_sync();
    if (key >= 0) {
      fx_st_i32(s, 2 * rows + 1 + at, i);
      if (last) fx_st_i32(s, key, at + 1);
    }
    fx_sync();
  }
}
)";
}

}  // namespace fluxion::vulkan
