// Element idx of any node's result, by the node's class: the entry point of the shared
// per-element lowering (lowering.h) for a backend's `compute`.
#pragma once

#include <vector>

#include "ir/ir.h"
#include "kernel/elementwise_lowering.h"
#include "kernel/gather_lowering.h"
#include "kernel/view_lowering.h"

namespace fluxion::kernel {

// x, node n's element, rounded to f16 or bf16 when n computes it (in f32 registers) rather than
// moving it (views, selects, constants and exact reductions move theirs): once per op, as the
// reference evaluator rounds its double result.
template <class Builder, class V>
V rounded(Builder& b, const ir::Node& n, V x, DType out) {
  ir::OpClass c = ir::op_info(n.op).cls;
  bool computes = c == ir::OpClass::Unary || c == ir::OpClass::Binary || c == ir::OpClass::Convert ||
                  c == ir::OpClass::Random || c == ir::OpClass::Iota;
  return computes && is_half(out) ? b.round_to(x, out) : x;
}

// Element idx of n's result, before rounding.
template <class Builder, class V>
V lower_node_element(Builder& b, const ir::Region& r, const ir::Node& n, const std::vector<V>& idx) {
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

template <class Builder, class V>
V lower_node(Builder& b, const ir::Region& r, const ir::Node& n, const std::vector<V>& idx) {
  return rounded(b, n, lower_node_element(b, r, n, idx), r.type(n.results[0]).dtype);
}

}  // namespace fluxion::kernel
