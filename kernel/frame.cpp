#include "kernel/frame.h"

#include <algorithm>

#include "kernel/conv_product.h"

namespace fluxion::kernel {

bool root_per_element(const ir::Region& r, const Kernel& k, const KernelPlan& plan) {
  return k.kind == KernelKind::MatMul && r.nodes[k.root].op != ir::Op::MatMul &&
         (plan.strategy == Strategy::Direct || plan.strategy == Strategy::InLoop);
}

KernelFrame::KernelFrame(const ir::Region& r, const RegionSchedule& s, const Kernel& k, const KernelPlan& plan)
    : region_(r), schedule_(s), kernel_(k), producer_(kernel::producers(r)), computed_(r.types.size(), false) {
  bool accumulates_root =
      (k.kind == KernelKind::MatMul || k.kind == KernelKind::Scatter) && !root_per_element(r, k, plan);
  auto mark = [&](size_t n) {
    const ir::Node& node = r.nodes[n];
    bool in_memory = k.kind != KernelKind::StraightLine &&
                     (ir::op_info(node.op).cls == ir::OpClass::Reduce || (accumulates_root && n == k.root));
    if (in_memory) return;
    for (ir::ValueId v : node.results) computed_[static_cast<size_t>(v)] = true;
  };
  for (size_t n : k.nodes) mark(n);
  for (size_t n : k.recomputed) mark(n);
}

const ir::Node* KernelFrame::producer(ir::ValueId v) const {
  int p = producer_[static_cast<size_t>(v)];
  return p >= 0 ? &region_.nodes[static_cast<size_t>(p)] : nullptr;
}

ir::ValueId KernelFrame::storage_of(ir::ValueId v) const {
  size_t vi = static_cast<size_t>(v);
  return schedule_.storage[vi] == Storage::Alias ? schedule_.alias_of[vi] : v;
}

KernelFrame::Source KernelFrame::source(ir::ValueId v) const {
  if (computed(v)) return Source::Computed;
  const ir::Node* node = producer(v);
  if (node && node->op == ir::Op::Constant && node->attrs.data.size() == 1) return Source::Splat;
  if (node && ir::is_view(node->op) && schedule_.storage[static_cast<size_t>(v)] != Storage::Alias) return Source::View;
  return Source::Memory;
}

bool KernelFrame::stored(ir::ValueId v) const {
  Storage st = schedule_.storage[static_cast<size_t>(v)];
  return st == Storage::Slot || st == Storage::Output;
}

bool KernelFrame::reduces() const {
  return std::any_of(kernel_.nodes.begin(), kernel_.nodes.end(),
                     [&](size_t i) { return ir::op_info(region_.nodes[i].op).cls == ir::OpClass::Reduce; });
}

bool KernelFrame::collapsible() const {
  if (kernel_.space.size() < 2) return false;
  int64_t n = numel(kernel_.space);
  auto plain = [&](ir::ValueId v) {
    size_t vi = static_cast<size_t>(v);
    if (computed(v)) return true;
    if (const ir::Node* pn = producer(v)) {
      if (pn->op == ir::Op::Constant && pn->attrs.data.size() == 1) return true;
      // A broadcast of one element reads index 0 whatever the index.
      if (pn->op == ir::Op::Broadcast && region_.type(pn->operands[0]).numel() == 1) return true;
      // A view is read through its index math even when another kernel also stores it (a
      // transposed result): that needs the full index, not the linear one.
      if (ir::is_view(pn->op) && schedule_.storage[vi] != Storage::Alias) return false;
    }
    Storage st = schedule_.storage[vi];
    return st != Storage::View && st != Storage::None && region_.type(v).numel() == n;
  };
  std::vector<size_t> nodes = kernel_.nodes;
  nodes.insert(nodes.end(), kernel_.recomputed.begin(), kernel_.recomputed.end());
  for (size_t i : nodes) {
    const ir::Node& node = region_.nodes[i];
    ir::OpClass cls = ir::op_info(node.op).cls;
    bool full_reduce = cls == ir::OpClass::Reduce && node.attrs.axes.size() == kernel_.space.size();
    if (!ir::is_elementwise(node.op) && !full_reduce) return false;
    for (ir::ValueId o : node.operands) {
      if (!plain(o)) return false;
    }
  }
  return true;
}

ProductDims product_dims(const ir::Region& r, const Kernel& k) {
  const ir::Node& root = r.nodes[k.root];
  ProductDims d;
  if (root.op != ir::Op::MatMul) {
    ConvProduct p = conv_product(r, root);
    if (p.batch > 0) d.batch = {p.batch};
    d.M = p.M, d.N = p.N, d.K = p.K();
    return d;
  }
  const Shape& cs = r.type(root.results[0]).shape;
  size_t rank = cs.size();
  d.batch.assign(cs.begin(), cs.end() - 2);
  d.M = cs[rank - 2];
  d.N = cs[rank - 1];
  d.K = r.type(root.operands[0]).shape.back();
  return d;
}

}  // namespace fluxion::kernel
