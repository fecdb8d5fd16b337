// transpose(a @ b) as transpose(b) @ transpose(a): the product then writes its result in the
// layout it is read in. Differentiating x @ transpose(W) (a dense layer, an LSTM's recurrent
// product) yields W's gradient as transpose(transpose(x) @ dy): without the rewrite it is
// computed [in, out] and then copied, transposed, into [out, in] by a kernel whose reads are a
// column apart (or read transposed by the optimizer's update, element by element).
#include <vector>

#include "transforms/passes/passes.h"

namespace fluxion::passes {
namespace {

bool swaps_two_axes(const ir::Node& n) {
  return n.op == ir::Op::Transpose && n.attrs.perm == std::vector<int64_t>{1, 0};
}

}  // namespace

bool rewrite_transposed_products(ir::Region& r) {
  bool changed = false;
  std::vector<int> uses(r.types.size(), 0);
  for (const ir::Node& n : r.nodes)
    for (ir::ValueId v : n.operands) ++uses[static_cast<size_t>(v)];
  for (ir::ValueId v : r.results) ++uses[static_cast<size_t>(v)];
  // Nodes move to `out` as they are visited, a producer before its users, with the transposes
  // this pass makes. `placed[v]` is the index in `out` of the node that made value v; it grows
  // with the values the pass makes, since a later rewrite can read one (the transpose of a
  // rewritten product reads the new transposes of its operands).
  std::vector<ir::Node> out;
  out.reserve(r.nodes.size());
  std::vector<int> placed(r.types.size(), -1);
  auto place = [&](ir::Node&& n) {
    placed.resize(r.types.size(), -1);
    for (ir::ValueId v : n.results) placed[static_cast<size_t>(v)] = static_cast<int>(out.size());
    out.push_back(std::move(n));
  };
  auto visited_producer = [&](ir::ValueId v) -> const ir::Node* {
    size_t i = static_cast<size_t>(v);
    return i < placed.size() && placed[i] >= 0 ? &out[static_cast<size_t>(placed[i])] : nullptr;
  };
  for (ir::Node& n : r.nodes) {
    for (ir::Region& inner : n.regions) changed = rewrite_transposed_products(inner) || changed;
    const ir::Node* product = swaps_two_axes(n) ? visited_producer(n.operands[0]) : nullptr;
    if (!product || product->op != ir::Op::MatMul || uses[static_cast<size_t>(n.operands[0])] != 1 ||
        r.type(product->operands[0]).shape.size() != 2 || r.type(product->operands[1]).shape.size() != 2) {
      place(std::move(n));
      continue;
    }
    ir::ValueId a = product->operands[0], b = product->operands[1];
    ir::Attrs attrs = product->attrs;
    // transpose(transpose(x)) is x; any other operand gets a transpose view.
    auto transposed = [&](ir::ValueId x) {
      const ir::Node* q = visited_producer(x);
      if (q && swaps_two_axes(*q)) return q->operands[0];
      ir::Node view;
      view.op = ir::Op::Transpose;
      view.operands = {x};
      view.attrs.perm = {1, 0};
      ir::ValueId t = r.new_value(ir::infer_types(view.op, {r.type(x)}, view.attrs, {}, {})[0]);
      view.results = {t};
      view.file = n.file;
      view.line = n.line;
      place(std::move(view));
      return t;
    };
    ir::ValueId tb = transposed(b), ta = transposed(a);
    ir::Node swapped;
    swapped.op = ir::Op::MatMul;
    swapped.attrs = std::move(attrs);
    swapped.operands = {tb, ta};
    swapped.results = n.results;
    swapped.file = n.file;
    swapped.line = n.line;
    place(std::move(swapped));
    changed = true;
  }
  r.nodes = std::move(out);
  return changed;  // the original products are now dead; DCE removes them
}

}  // namespace fluxion::passes
