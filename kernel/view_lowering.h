// What one element of a view reads: the index math of reshape, transpose, broadcast, slice,
// pad, concat, gather and take, written once for every backend (the Builder is lowering.h's).
// Out-of-range reads never happen: an index that may leave its operand (pad, concat, gathered
// indices) is clamped, and the element read there is replaced by select where it is not wanted.
#pragma once

#include <vector>

#include "fluxion/error.h"
#include "ir/ir.h"
#include "kernel/lowering.h"

namespace fluxion::kernel {

// The index of reshape's operand (shape `in`) read by result index idx (shape `out`), or by a
// collapsed kernel's single linear index. Runs of dimensions with equal element counts on both
// sides are matched: a run that is one dimension on each side keeps its index, the others are
// flattened and split again within the run only, and unit dimensions read index 0; a divide
// per dimension would run at every read, and a reader such as col2im reads 25 reshaped slices
// per element.
template <class Builder, class V>
std::vector<V> reshape_source(Builder& b, const Shape& out, const Shape& in, const std::vector<V>& idx) {
  std::vector<V> src(in.size(), b.index(0));
  // Splits position f into dimensions dims[k..k1) of `in`.
  auto split = [&](V f, const std::vector<size_t>& dims, size_t k, size_t k1) {
    f = b.bind(f);
    for (size_t d = k1; d-- > k;) {
      src[dims[d]] = d == k ? f : b.index_rem(f, in[dims[d]]);
      if (d > k) f = b.bind(b.index_div(f, in[dims[d]]));
    }
  };
  if (idx.size() != out.size() || numel(in) == 0) {
    std::vector<size_t> all(in.size());
    for (size_t d = 0; d < in.size(); ++d) all[d] = d;
    split(idx.size() == out.size() ? flat_index(b, idx, out) : idx[0], all, 0, in.size());
    return src;
  }
  std::vector<size_t> on, inn;  // the dimensions that are not 1
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] != 1) on.push_back(d);
  }
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != 1) inn.push_back(d);
  }
  for (size_t i = 0, k = 0; i < on.size();) {
    size_t i1 = i + 1, k1 = k + 1;
    int64_t po = out[on[i]], pi = in[inn[k]];
    while (po != pi) {
      if (po < pi) {
        po *= out[on[i1++]];
      } else {
        pi *= in[inn[k1++]];
      }
    }
    if (i1 - i == 1 && k1 - k == 1) {
      src[inn[k]] = idx[on[i]];
    } else {
      V f = idx[on[i]];
      for (size_t d = i + 1; d < i1; ++d) f = b.index_add(b.index_mul(f, b.index(out[on[d]])), idx[on[d]]);
      split(f, inn, k, k1);
    }
    i = i1, k = k1;
  }
  return src;
}

// Element idx of view node n's result v.
template <class Builder, class V>
V lower_view(Builder& b, const ir::Region& r, const ir::Node& n, ir::ValueId v, const std::vector<V>& idx) {
  using ir::Op;
  const Shape& out = r.type(v).shape;
  const Shape& in = r.type(n.operands[0]).shape;
  const ir::Attrs& a = n.attrs;
  std::vector<V> src;
  switch (n.op) {
    case Op::Reshape: return b.at(n.operands[0], reshape_source(b, out, in, idx));
    case Op::Transpose:
      src.assign(in.size(), V{});
      for (size_t i = 0; i < a.perm.size(); ++i) src[static_cast<size_t>(a.perm[i])] = idx[i];
      return b.at(n.operands[0], src);
    case Op::Broadcast: {
      size_t off = out.size() - in.size();
      for (size_t d = 0; d < in.size(); ++d) src.push_back(in[d] == 1 ? b.index(0) : idx[d + off]);
      return b.at(n.operands[0], src);
    }
    case Op::Slice:
      for (size_t d = 0; d < in.size(); ++d) src.push_back(index_affine(b, idx[d], a.strides[d], a.starts[d]));
      return b.at(n.operands[0], src);
    case Op::Pad: {
      // Result index i reads operand index (i - before) / stride where that divides exactly and
      // lies inside; everything else is zero.
      DType t = r.type(v).dtype;
      if (numel(in) == 0) return b.constant(t, 0);
      V valid = b.constant(DType::boolean, 1);
      for (size_t d = 0; d < in.size(); ++d) {
        int64_t stride = a.strides[d];
        V shifted = b.bind(index_affine(b, idx[d], 1, -a.padding[2 * d]));
        V q = stride == 1 ? shifted : b.bind(b.index_div(shifted, stride));
        valid = b.logic_and(valid, b.index_compare(Compare::Ge, shifted, b.index(0)));
        if (stride != 1)
          valid = b.logic_and(valid, b.index_compare(Compare::Eq, b.index_rem(shifted, stride), b.index(0)));
        valid = b.logic_and(valid, b.index_compare(Compare::Lt, q, b.index(in[d])));
        src.push_back(b.clamp_index(q, in[d]));
      }
      return b.select(valid, b.at(n.operands[0], src), b.constant(t, 0));
    }
    case Op::Concat: {
      // Every part read at its clamped local index; the last part whose range has begun wins.
      size_t ax = static_cast<size_t>(a.axes[0]);
      V result{};
      bool first = true;
      int64_t offset = 0;
      for (ir::ValueId part : n.operands) {
        int64_t size = r.type(part).shape[ax];
        if (size == 0) continue;
        V local = b.bind(index_affine(b, idx[ax], 1, -offset));
        std::vector<V> pi = idx;
        pi[ax] = b.clamp_index(local, size);
        V x = b.at(part, pi);
        result = first ? x : b.select(b.index_compare(Compare::Ge, local, b.index(0)), x, result);
        first = false;
        offset += size;
      }
      return result;
    }
    case Op::Gather: {
      size_t ax = static_cast<size_t>(a.axes[0]);
      src = idx;
      src[ax] = b.clamp_index(b.element_to_index(b.at(n.operands[1], idx)), in[ax]);
      return b.at(n.operands[0], src);
    }
    case Op::Take: {
      // The index array's dimensions replace dimension ax of the operand.
      size_t ax = static_cast<size_t>(a.axes[0]);
      auto first = idx.begin() + static_cast<long>(ax);
      auto last = first + static_cast<long>(r.type(n.operands[1]).shape.size());
      V i = b.element_to_index(b.at(n.operands[1], std::vector<V>(first, last)));
      src.assign(idx.begin(), first);
      src.push_back(b.clamp_index(i, in[ax]));
      src.insert(src.end(), last, idx.end());
      return b.at(n.operands[0], src);
    }
    default: break;
  }
  detail::fail(ir::op_name(n.op), "internal error: not a view op");
}

}  // namespace fluxion::kernel
