// Elementwise ops computed below reshapes that only add unit dimensions. vmap of a function on
// columns ([m, 1] per example) computes a product as [B, m] and then works on [B, m, 1]; the
// elementwise ops after the product (a bias, an activation) then read it through a reshape, and
// the fuser, which fuses an epilogue only at its product's own shape, gives them a kernel of
// their own. Computed at [B, m] (their other operands reshaped, as views) and reshaped once at
// the end, they join the product's kernel.
#include <vector>

#include "transforms/passes/passes.h"

namespace fluxion::passes {
namespace {

Shape squeezed(const Shape& s) {
  Shape out;
  for (int64_t d : s) {
    if (d != 1) out.push_back(d);
  }
  return out;
}

}  // namespace

bool compute_below_unit_reshapes(ir::Region& r) {
  bool changed = false;
  std::vector<ir::Node> out;
  out.reserve(r.nodes.size());
  std::vector<int> def(r.types.size(), -1);  // index in `out` of the node defining each value
  auto push = [&](ir::Node n) {
    for (ir::ValueId v : n.results) {
      if (static_cast<size_t>(v) >= def.size()) def.resize(static_cast<size_t>(v) + 1, -1);
      def[static_cast<size_t>(v)] = static_cast<int>(out.size());
    }
    out.push_back(std::move(n));
  };
  auto reshape_node = [&](ir::ValueId v, const Shape& to, const ir::Node& at, ir::ValueId result) {
    ir::Node n;
    n.op = ir::Op::Reshape;
    n.operands = {v};
    n.results = {result >= 0 ? result : r.new_value({r.type(v).dtype, to})};
    n.file = at.file;
    n.line = at.line;
    return n;
  };
  // The lowest-rank value that v is a reshape (or a chain of reshapes) of, with v's elements in
  // the same order apart from unit dimensions; v itself when there is none.
  auto lowest_unit_source = [&](ir::ValueId v) {
    Shape want = squeezed(r.type(v).shape);
    ir::ValueId best = v;
    for (ir::ValueId at = v;;) {
      int d = static_cast<size_t>(at) < def.size() ? def[static_cast<size_t>(at)] : -1;
      if (d < 0 || out[static_cast<size_t>(d)].op != ir::Op::Reshape) break;
      at = out[static_cast<size_t>(d)].operands[0];
      if (squeezed(r.type(at).shape) == want && r.type(at).rank() < r.type(best).rank()) best = at;
    }
    return best;
  };
  for (ir::Node& n : r.nodes) {
    for (ir::Region& inner : n.regions) changed = compute_below_unit_reshapes(inner) || changed;
    ir::ValueId below = -1;
    if (ir::is_elementwise(n.op) && n.results.size() == 1) {
      for (ir::ValueId o : n.operands) {
        ir::ValueId s = lowest_unit_source(o);
        if (s != o && (below < 0 || r.type(s).rank() < r.type(below).rank())) below = s;
      }
    }
    if (below < 0) {
      push(std::move(n));
      continue;
    }
    Shape shape = r.type(below).shape;
    ir::Node low = n;
    for (ir::ValueId& o : low.operands) {
      ir::ValueId s = lowest_unit_source(o);
      if (r.type(s).shape == shape) {
        o = s;
      } else {
        push(reshape_node(o, shape, n, -1));
        o = out.back().results[0];
      }
    }
    std::vector<TensorType> in;
    for (ir::ValueId o : low.operands) in.push_back(r.type(o));
    TensorType result = r.type(n.results[0]);
    result.shape = shape;
    low.results = {r.new_value(ir::infer_types(low.op, in, low.attrs, {result}, {})[0])};
    ir::ValueId computed = low.results[0];
    push(std::move(low));
    push(reshape_node(computed, r.type(n.results[0]).shape, n, n.results[0]));
    changed = true;
  }
  r.nodes = std::move(out);
  return changed;
}

}  // namespace fluxion::passes
