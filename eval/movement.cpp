// Creation and data movement: constant, iota, reshape, transpose, broadcast, slice, concat,
// gather, take, and take's transpose scatter_add. Each output element is computed from its
// multi-index, except scatter_add's, which sum the updates in index order.
#include <algorithm>

#include "eval/buffer.h"
#include "fluxion/error.h"

namespace fluxion::eval {
namespace {

using ir::OpClass;

int64_t clamp_index(double i, int64_t dim) { return std::clamp<int64_t>(static_cast<int64_t>(i), 0, dim - 1); }

// The flat input index that output multi-index `o` (flat index `flat`) reads; `src` is scratch
// space for the input's multi-index, so that no element allocates.
int64_t source_index(const ir::Node& n, const std::vector<Value>& in, const std::vector<int64_t>& o, int64_t flat,
                     const Shape& out_shape, std::vector<int64_t>& src) {
  const ir::Attrs& a = n.attrs;
  const Shape& s = in[0]->type.shape;
  src.resize(s.size());
  switch (ir::op_info(n.op).cls) {
    case OpClass::Reshape: return flat;
    case OpClass::Transpose:
      for (size_t i = 0; i < a.perm.size(); ++i) src[static_cast<size_t>(a.perm[i])] = o[i];
      return ravel(src, s);
    case OpClass::Broadcast: {
      size_t off = out_shape.size() - s.size();
      for (size_t d = 0; d < s.size(); ++d) src[d] = s[d] == 1 ? 0 : o[d + off];
      return ravel(src, s);
    }
    case OpClass::Slice:
      for (size_t d = 0; d < s.size(); ++d) src[d] = a.starts[d] + o[d] * a.strides[d];
      return ravel(src, s);
    case OpClass::Gather: {
      size_t ax = static_cast<size_t>(a.axes[0]);
      std::copy(o.begin(), o.end(), src.begin());
      src[ax] = clamp_index(in[1]->v[static_cast<size_t>(flat)], s[ax]);
      return ravel(src, s);
    }
    case OpClass::Take: {
      // out = [A..., I..., B...]; the I part indexes the indices array.
      size_t ax = static_cast<size_t>(a.axes[0]);
      const Shape& is = in[1]->type.shape;
      int64_t which = 0;
      for (size_t d = 0; d < is.size(); ++d) which = which * is[d] + o[ax + d];
      std::copy(o.begin(), o.begin() + static_cast<long>(ax), src.begin());
      src[ax] = clamp_index(in[1]->v[static_cast<size_t>(which)], s[ax]);
      std::copy(o.begin() + static_cast<long>(ax + is.size()), o.end(), src.begin() + static_cast<long>(ax) + 1);
      return ravel(src, s);
    }
    default: break;
  }
  detail::fail(ir::op_name(n.op), "not a data-movement op");
}

Buffer concat(const ir::Node& n, const std::vector<Value>& in, const TensorType& out) {
  size_t ax = static_cast<size_t>(n.attrs.axes[0]);
  Buffer r = zeros(out);
  std::vector<int64_t> o(out.shape.size(), 0), src;
  for (size_t i = 0; i < r.v.size(); ++i, next_index(o, out.shape)) {
    src = o;
    size_t part = 0;
    while (src[ax] >= in[part]->type.shape[ax]) src[ax] -= in[part++]->type.shape[ax];
    r.v[i] = in[part]->v[static_cast<size_t>(ravel(src, in[part]->type.shape))];
  }
  return r;
}

// Each operand element goes to lo + i * stride; every other position stays zero.
Buffer pad(const ir::Node& n, const Buffer& x, const TensorType& out) {
  Buffer r = zeros(out);
  const Shape& s = x.type.shape;
  std::vector<int64_t> at(s.size(), 0), idx(s.size());
  for (size_t i = 0; i < x.v.size(); ++i, next_index(at, s)) {
    for (size_t d = 0; d < s.size(); ++d) idx[d] = n.attrs.padding[2 * d] + at[d] * n.attrs.strides[d];
    r.v[static_cast<size_t>(ravel(idx, out.shape))] = x.v[i];
  }
  return r;
}

// out[a, clamp(idx[i]), b] += updates[a, i, b] for i in increasing order, each sum rounded to the
// dtype as the backends' adds are (f32 + f32 in double, then to float, is the f32 sum).
Buffer scatter_add(const ir::Node& n, const Buffer& updates, const Buffer& idx, const TensorType& out) {
  Buffer r = zeros(out);
  size_t ax = static_cast<size_t>(n.attrs.axes[0]);
  int64_t outer = numel(Shape(out.shape.begin(), out.shape.begin() + static_cast<long>(ax)));
  int64_t rows = out.shape[ax];
  int64_t inner = numel(Shape(out.shape.begin() + static_cast<long>(ax) + 1, out.shape.end()));
  int64_t count = idx.type.numel();
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t i = 0; i < count; ++i) {
      int64_t c = clamp_index(idx.v[static_cast<size_t>(i)], rows);
      for (int64_t b = 0; b < inner; ++b) {
        double& dst = r.v[static_cast<size_t>((a * rows + c) * inner + b)];
        dst = round_to(out.dtype, dst + updates.v[static_cast<size_t>((a * count + i) * inner + b)]);
      }
    }
  }
  return r;
}

}  // namespace

Buffer eval_movement(const ir::Node& n, const std::vector<Value>& in, const TensorType& out) {
  Buffer r = zeros(out);
  switch (ir::op_info(n.op).cls) {
    case OpClass::Constant:
      for (size_t i = 0; i < r.v.size(); ++i)
        r.v[i] = round_to(out.dtype, n.attrs.data.size() == 1 ? n.attrs.data[0] : n.attrs.data[i]);
      return r;
    case OpClass::Iota: {
      std::vector<int64_t> o(out.shape.size(), 0);
      for (size_t i = 0; i < r.v.size(); ++i, next_index(o, out.shape))
        r.v[i] = round_to(out.dtype, static_cast<double>(o[static_cast<size_t>(n.attrs.axes[0])]));
      return r;
    }
    case OpClass::Concat: return concat(n, in, out);
    case OpClass::Pad: return pad(n, *in[0], out);
    case OpClass::ScatterAdd: return scatter_add(n, *in[0], *in[1], out);
    default: break;
  }
  std::vector<int64_t> o(out.shape.size(), 0), src;
  for (size_t i = 0; i < r.v.size(); ++i, next_index(o, out.shape))
    r.v[i] = in[0]->v[static_cast<size_t>(source_index(n, in, o, static_cast<int64_t>(i), out.shape, src))];
  return r;
}

}  // namespace fluxion::eval
