// What decides how a kernel is split across threads: its work, what its parts fold (the
// reductions over what they cut, or a weight gradient's images), and how their partial results
// are laid out when the kernel is split into parts (Kernel::split_chunks).
#include <algorithm>

#include "kernel/conv_product.h"
#include "kernel/kernel_ir.h"
#include "support/round_up.h"

namespace fluxion::kernel {
namespace {

constexpr int64_t kPartialAlign = 64;  // each partial result starts on its own cache line

// Scalar operations at one index of a loop kernel for node n: the op table's cost, a pooling
// window's elements for pooling and its gradient, nothing for a view (index arithmetic only).
int64_t operations(const ir::Node& n) {
  if (ir::is_view(n.op)) return 0;
  ir::OpClass cls = ir::op_info(n.op).cls;
  if (cls == ir::OpClass::Pool || cls == ir::OpClass::PoolGrad) {
    int64_t window = 1;
    for (int64_t w : n.attrs.window) window *= w;
    return std::max<int64_t>(1, window);
  }
  return std::max(1, ir::op_info(n.op).cost);
}

int64_t partial_bytes(const ir::Region& r, size_t node) {
  const TensorType& t = r.type(r.nodes[node].results[0]);
  int64_t bytes = t.numel() * dtype_size(t.dtype);
  return support::round_up(bytes, kPartialAlign);
}

}  // namespace

int64_t kernel_work(const ir::Region& r, const Kernel& k) {
  if (k.kind == KernelKind::Scatter) {
    // Zeroing the result and adding every update, each a load and a store.
    const ir::Node& root = r.nodes[k.root];
    return kLeastOperationsPerIndex * (numel(k.space) + r.type(root.operands[0]).numel());
  }
  if (k.kind != KernelKind::MatMul) {
    // An LSTM cell's gates are 16,384 elements but over a hundred operations on each.
    int64_t per_index = 0;
    for (const std::vector<size_t>* nodes : {&k.nodes, &k.recomputed}) {
      for (size_t n : *nodes) per_index += operations(r.nodes[n]);
    }
    return numel(k.space) * std::max(kLeastOperationsPerIndex, per_index);
  }
  const ir::Node& root = r.nodes[k.root];
  if (root.op == ir::Op::MatMul) return numel(k.space) * r.type(root.operands[0]).shape.back();
  ConvProduct p = conv_product(r, root);
  return std::max<int64_t>(1, p.batch) * p.M * p.N * p.K();
}

SplitLayout split_layout(const ir::Region& r, const Kernel& k) {
  SplitLayout out;
  auto fold = [&](size_t i) {
    out.folded.push_back(i);
    out.offsets.push_back(out.part_bytes);
    out.part_bytes += partial_bytes(r, i);
  };
  if (k.split_over == SplitOver::Images || k.split_over == SplitOver::Depth) {
    fold(k.root);
    return out;
  }
  int64_t axis = k.split_over == SplitOver::Columns ? 1 : 0;
  for (size_t i : k.nodes) {
    const ir::Node& n = r.nodes[i];
    if (ir::op_info(n.op).cls == ir::OpClass::Reduce &&
        std::find(n.attrs.axes.begin(), n.attrs.axes.end(), axis) != n.attrs.axes.end())
      fold(i);
  }
  return out;
}

int64_t split_extent(const ir::Region& r, const Kernel& k) {
  switch (k.split_over) {
    case SplitOver::Columns: return k.space.size() > 1 ? k.space[1] : 1;
    case SplitOver::Images: return r.type(r.nodes[k.root].operands[1]).shape.at(0);
    case SplitOver::Depth: return r.type(r.nodes[k.root].operands[0]).shape.back();
    case SplitOver::Outer: break;
  }
  return k.space.empty() ? 1 : k.space[0];
}

}  // namespace fluxion::kernel
