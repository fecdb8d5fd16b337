// Strided views: a chain of transpose, broadcast, slice and reshape ops over a stored value,
// expressed as offset + strides. The MatMul kernel reads its operands through them, so a
// transposed weight in a backward pass is never copied.
#include "kernel/kernel_ir.h"

namespace fluxion::kernel {
namespace {

// NumPy's rule for reshaping without a copy: each group of old dimensions that multiplies to a
// group of new dimensions must be contiguous in itself.
bool reshape_strides(const Shape& old_shape, const std::vector<int64_t>& old_strides, const Shape& new_shape,
                     std::vector<int64_t>* out) {
  std::vector<int64_t> od, os;
  for (size_t i = 0; i < old_shape.size(); ++i) {
    if (old_shape[i] != 1) od.push_back(old_shape[i]), os.push_back(old_strides[i]);
  }
  std::vector<int64_t> nd, map;  // new dims that are not 1, and their positions
  for (size_t i = 0; i < new_shape.size(); ++i) {
    if (new_shape[i] != 1) nd.push_back(new_shape[i]), map.push_back(static_cast<int64_t>(i));
  }
  std::vector<int64_t> ns(nd.size(), 0);
  size_t oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nd.size() && oi < od.size()) {
    int64_t np = nd[ni], op = od[oi];
    while (np != op) {
      if (np < op) {
        if (nj >= nd.size()) return false;
        np *= nd[nj++];
      } else {
        if (oj >= od.size()) return false;
        op *= od[oj++];
      }
    }
    for (size_t ok = oi; ok + 1 < oj; ++ok) {
      if (os[ok] != od[ok + 1] * os[ok + 1]) return false;
    }
    ns[nj - 1] = os[oj - 1];
    for (size_t nk = nj - 1; nk > ni; --nk) ns[nk - 1] = ns[nk] * nd[nk];
    ni = nj++;
    oi = oj++;
  }
  if (ni != nd.size() || oi != od.size()) return false;
  out->assign(new_shape.size(), 0);
  for (size_t i = 0; i < map.size(); ++i) (*out)[static_cast<size_t>(map[i])] = ns[i];
  return true;
}

}  // namespace

bool is_widening(const ir::Region& r, const ir::Node& n) {
  return n.op == ir::Op::Convert && is_half(r.type(n.operands[0]).dtype) && r.type(n.results[0]).dtype == DType::f32;
}

bool strided_view(const ir::Region& r, const RegionSchedule& s, const std::vector<int32_t>& producer, ir::ValueId v,
                  StridedView* out, bool widening) {
  size_t vi = static_cast<size_t>(v);
  const Shape& shape = r.type(v).shape;
  int p = producer[vi];
  if (widening && p >= 0 && is_widening(r, r.nodes[static_cast<size_t>(p)]))
    return strided_view(r, s, producer, r.nodes[static_cast<size_t>(p)].operands[0], out, widening);
  if (s.storage[vi] != Storage::View || p < 0) {
    out->base = s.storage[vi] == Storage::Alias ? s.alias_of[vi] : v;
    out->offset = 0;
    out->strides = row_major_strides(shape);
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) out->strides[d] = 0;
    }
    return true;
  }
  const ir::Node& n = r.nodes[static_cast<size_t>(p)];
  StridedView in;
  if (n.op != ir::Op::Transpose && n.op != ir::Op::Broadcast && n.op != ir::Op::Slice && n.op != ir::Op::Reshape) {
    return false;
  }
  if (!strided_view(r, s, producer, n.operands[0], &in, widening)) return false;
  const Shape& in_shape = r.type(n.operands[0]).shape;
  out->base = in.base;
  out->offset = in.offset;
  out->strides.assign(shape.size(), 0);
  switch (n.op) {
    case ir::Op::Transpose:
      for (size_t i = 0; i < shape.size(); ++i) out->strides[i] = in.strides[static_cast<size_t>(n.attrs.perm[i])];
      return true;
    case ir::Op::Broadcast: {
      size_t off = shape.size() - in_shape.size();
      for (size_t d = 0; d < in_shape.size(); ++d) out->strides[d + off] = in_shape[d] == 1 ? 0 : in.strides[d];
      return true;
    }
    case ir::Op::Slice:
      for (size_t d = 0; d < shape.size(); ++d) {
        out->offset += n.attrs.starts[d] * in.strides[d];
        out->strides[d] = in.strides[d] * n.attrs.strides[d];
      }
      return true;
    default: return reshape_strides(in_shape, in.strides, shape, &out->strides);
  }
}

bool matmul_operands(const Kernel& k, StridedView* a, StridedView* b) {
  if (k.operand_views.size() != 2) return false;
  *a = k.operand_views[0];
  *b = k.operand_views[1];
  return true;
}

}  // namespace fluxion::kernel
