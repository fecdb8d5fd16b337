// A Scatter kernel on the CPU (the sums of kernel/scatter_lowering.h). Threads split the
// kernel's dimension 0 as for any kernel: with the axis first, that is the result's rows, so each
// call zeroes its block of rows and scans every index, adding the update rows that land in its
// block; with the axis later, it is the outer indices, each call owning all rows of its own.
// Either way each result element is written by one call only, its updates added in index order,
// so the result does not depend on the thread count. The columns of a row are contiguous in the
// result and in the updates: one vectorised loop adds a whole update row.
#include "backends/cpu/codegen.h"
#include "backends/cpu/renderer.h"
#include "kernel/scatter_lowering.h"

namespace fluxion::cpu {

using llvm::Value;

void KernelEmitter::scatter(Value* lo, Value* hi) {
  if (numel(kernel_.space) == 0) return;
  kernel::ScatterGeometry g = kernel::scatter_geometry(region_, region_.nodes[kernel_.root]);
  Renderer render(*this);
  bool by_rows = region_.nodes[kernel_.root].attrs.axes[0] == 0;
  int64_t per = g.outer / kernel_.space[0];  // outer indices per index of dimension 0 (axis > 0)
  Value* a_lo = by_rows ? i64(0) : builder_.CreateMul(lo, i64(per));
  Value* a_hi = by_rows ? i64(1) : builder_.CreateMul(hi, i64(per));
  Value* row_lo = by_rows ? lo : i64(0);
  Value* row_hi = by_rows ? hi : i64(g.rows);
  auto columns = [&](const std::function<void(Value*)>& body) {
    emit_for(
        builder_, i64(0), i64(g.inner), {},
        [&](Value* col, const std::vector<Value*>&) {
          body(col);
          return std::vector<Value*>{};
        },
        LoopHint::Vectorize);
  };
  emit_for(builder_, a_lo, a_hi, {}, [&](Value* a, const std::vector<Value*>&) {
    emit_for(builder_, row_lo, row_hi, {}, [&](Value* c, const std::vector<Value*>&) {
      columns([&](Value* col) { kernel::scatter_zero(render, g, a, c, col); });
      return std::vector<Value*>{};
    });
    kernel::scatter_scan(render, g, row_lo, row_hi, [&](Value* i, Value* c) {
      columns([&](Value* col) { kernel::scatter_element(render, g, a, i, c, col); });
    });
    return std::vector<Value*>{};
  });
}

}  // namespace fluxion::cpu
