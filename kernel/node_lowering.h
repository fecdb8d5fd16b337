// Element idx of any node's result, by the node's class: the entry point of the shared
// per-element lowering (lowering.h) for a backend's `compute`.
#pragma once

#include <vector>

#include "ir/ir.h"
#include "kernel/elementwise_lowering.h"
#include "kernel/gather_lowering.h"
#include "kernel/view_lowering.h"

namespace fluxion::kernel {

// Whether n computes its elements rather than moving them (views, selects, constants and exact
// reductions move them): an f16 or bf16 result that it computes in f32 registers is rounded to
// its format once, as the reference evaluator rounds its double result.
inline bool computes_elements(const ir::Node& n) {
  ir::OpClass c = ir::op_info(n.op).cls;
  return c == ir::OpClass::Unary || c == ir::OpClass::Binary || c == ir::OpClass::Convert || c == ir::OpClass::Random ||
         c == ir::OpClass::Iota;
}

template <class Builder, class V>
V lower_node(Builder& b, const ir::Region& r, const ir::Node& n, const std::vector<V>& idx) {
  ir::ValueId res = n.results[0];
  DType out = r.type(res).dtype;
  switch (ir::op_info(n.op).cls) {
    case ir::OpClass::Unary:
    case ir::OpClass::Binary:
    case ir::OpClass::Compare:
    case ir::OpClass::Select:
    case ir::OpClass::Convert: {
      std::vector<V> x;
      for (ir::ValueId o : n.operands) x.push_back(b.at(o, idx));
      return lower_elementwise(b, n, x, r.type(n.operands.back()).dtype, out);
    }
    case ir::OpClass::Constant: return b.constant(out, n.attrs.data.size() == 1 ? n.attrs.data[0] : 0);
    case ir::OpClass::Iota: return b.index_to_element(idx[static_cast<size_t>(n.attrs.axes[0])], out);
    default: break;
  }
  if (ir::is_view(n.op)) return lower_view(b, r, n, res, idx);
  return lower_gathering(b, r, n, idx);
}

}  // namespace fluxion::kernel
