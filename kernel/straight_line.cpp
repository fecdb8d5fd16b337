// Small regions as one straight-line kernel (KernelKind::StraightLine). Per-kernel costs (a loop,
// loads and stores of every intermediate, a call) dominate a loop body of a dozen elements; as
// one block of code, every intermediate stays in registers (the CPU backend makes each
// elementwise node a few vector operations and each sum a horizontal add).
#include <algorithm>

#include "kernel/kernel_ir.h"

namespace fluxion::kernel {

namespace {

// Scalar operations node n costs in a straight-line kernel, or -1 when it cannot be in one.
int64_t straight_line_work(const ir::Region& r, const ir::Node& n) {
  if (n.results.size() != 1) return -1;  // a loop, or a print (a step of the host's)
  for (ir::ValueId v : n.results) {
    if (r.type(v).numel() > kMaxStraightLineElements) return -1;
  }
  for (ir::ValueId v : n.operands) {
    if (r.type(v).numel() > kMaxStraightLineElements) return -1;
  }
  int64_t out = r.type(n.results[0]).numel();
  switch (ir::op_info(n.op).cls) {
    case ir::OpClass::Unary:
    case ir::OpClass::Binary:
    case ir::OpClass::Compare:
    case ir::OpClass::Select:
    case ir::OpClass::Convert:
    case ir::OpClass::Iota: return out;
    case ir::OpClass::Constant:
    case ir::OpClass::Reshape:
    case ir::OpClass::Transpose:
    case ir::OpClass::Broadcast:
    case ir::OpClass::Slice:
    case ir::OpClass::Pad:
    case ir::OpClass::Concat: return 0;
    case ir::OpClass::Gather:
    case ir::OpClass::Take: return out;
    case ir::OpClass::Reduce:
    case ir::OpClass::ArgReduce: return r.type(n.operands[0]).numel();
    case ir::OpClass::MatMul: return out * r.type(n.operands[0]).shape.back();
    default: return -1;
  }
}

}  // namespace

bool straight_line_region(const ir::Region& r) {
  int64_t work = 0;
  for (const ir::Node& n : r.nodes) {
    int64_t w = straight_line_work(r, n);
    if (w < 0) return false;
    work += w;
  }
  return work <= kMaxStraightLineWork;
}

RegionSchedule straight_line_schedule(const ir::Region& r) {
  RegionSchedule s = unplanned_schedule(r);
  Kernel k;
  k.kind = KernelKind::StraightLine;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const ir::Node& n = r.nodes[i];
    if (n.op == ir::Op::Constant && n.attrs.data.size() > 1) {
      s.storage[static_cast<size_t>(n.results[0])] = Storage::Global;
      continue;
    }
    if (n.op == ir::Op::Constant) s.storage[static_cast<size_t>(n.results[0])] = Storage::Inline;
    k.nodes.push_back(i);
  }
  // Only the results leave the kernel; a parameter or baked constant returned as is has its bytes.
  for (ir::ValueId v : r.results) {
    Storage& st = s.storage[static_cast<size_t>(v)];
    if (st != Storage::Param && st != Storage::Global) st = Storage::Slot;
  }
  if (!k.nodes.empty()) {
    s.kernels.push_back(std::move(k));
    s.steps.push_back({Step::Kind::Kernel, 0});
  }
  return s;
}

}  // namespace fluxion::kernel
