// Sums of f16 and bf16 values accumulate in f32: a reduction, product, convolution, average
// pooling, max-pooling gradient or scatter-add whose operands are 16-bit floats reads them
// converted to f32 and its result is converted back, once. A bf16 accumulator (8 significant
// bits) stops growing at 256 ones; every backend then sums as wide as the f32 programs it
// already runs, and the interpreter agrees (it sums in double and rounds once).
//
// An operand read through a transpose, reshape or broadcast is converted below the view and
// viewed again: the product of a training step's backward pass reads the transpose of a value
// its forward product read as it is, and so both read one conversion (CSE merges the twins),
// which can join the kernel that made the value (a broadcast is converted before it grows).
#include <unordered_map>
#include <vector>

#include "transforms/passes/passes.h"

namespace fluxion::passes {
namespace {

bool sums(ir::Op op) {
  switch (op) {
    case ir::Op::ReduceSum:
    case ir::Op::MatMul:
    case ir::Op::Conv2d:
    case ir::Op::Conv2dInputGrad:
    case ir::Op::Conv2dWeightGrad:
    case ir::Op::AvgPool2d:
    case ir::Op::AvgPool2dGrad:
    case ir::Op::MaxPool2dGrad:
    case ir::Op::ScatterAdd: return true;
    default: return false;
  }
}

bool converts_below(ir::Op op) { return op == ir::Op::Transpose || op == ir::Op::Reshape || op == ir::Op::Broadcast; }

}  // namespace

bool sum_halves_in_f32(ir::Region& r) {
  bool changed = false;
  // The views of 16-bit values that a conversion is moved below.
  std::unordered_map<ir::ValueId, ir::Node> views;
  for (const ir::Node& n : r.nodes) {
    if (converts_below(n.op) && is_half(r.type(n.operands[0]).dtype)) views.emplace(n.results[0], n);
  }
  std::vector<ir::Node> out;
  out.reserve(r.nodes.size());
  // A convert at the summing node's call site.
  auto convert = [&](ir::ValueId from, ir::ValueId to, const ir::Node& sum) {
    ir::Node c;
    c.op = ir::Op::Convert;
    c.operands = {from};
    c.results = {to};
    c.file = sum.file;
    c.line = sum.line;
    out.push_back(std::move(c));
  };
  // v as f32, through the views it is read through.
  auto widened = [&](auto& self, ir::ValueId v, const ir::Node& sum) -> ir::ValueId {
    TensorType t = r.type(v);
    t.dtype = DType::f32;
    ir::ValueId wide = r.new_value(t);
    auto view = views.find(v);
    if (view == views.end()) {
      convert(v, wide, sum);
      return wide;
    }
    ir::Node again = view->second;
    again.operands = {self(self, again.operands[0], sum)};
    again.results = {wide};
    out.push_back(std::move(again));
    return wide;
  };
  for (ir::Node& n : r.nodes) {
    for (ir::Region& inner : n.regions) changed = sum_halves_in_f32(inner) || changed;
    if (!sums(n.op) || !is_half(r.type(n.results[0]).dtype)) {
      out.push_back(std::move(n));
      continue;
    }
    for (ir::ValueId& o : n.operands)
      if (is_half(r.type(o).dtype)) o = widened(widened, o, n);
    ir::ValueId result = n.results[0];
    TensorType wide = r.type(result);
    wide.dtype = DType::f32;
    ir::ValueId summed = r.new_value(wide);
    n.results[0] = summed;
    out.push_back(std::move(n));
    convert(summed, result, out.back());
    changed = true;
  }
  r.nodes = std::move(out);
  return changed;
}

}  // namespace fluxion::passes
