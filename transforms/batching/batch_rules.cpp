// Batching rules of the ops without regions. Each moves the batch axis (leading on every batched
// operand) to where the op can carry it as an ordinary dimension: an extra leading axis for
// elementwise ops and views, folded into the image axis of convolutions and pooling, into the
// rows of a product with a shared matrix, or into the channel groups of a convolution whose
// weights differ per example.
#include <string>
#include <utility>

#include "fluxion/error.h"
#include "transforms/batching/rules.h"

namespace fluxion::batching {
namespace {

using ir::Op;
using ir::ValueId;

int64_t product(const Shape& s, size_t lo, size_t hi) {
  int64_t p = 1;
  for (size_t i = lo; i < hi; ++i) p *= s[i];
  return p;
}

std::vector<int64_t> shifted(std::vector<int64_t> axes) {
  for (int64_t& a : axes) ++a;
  return axes;
}

// [B, N, ...] -> [B*N, ...], and back.
ValueId fold(Builder& b, ValueId v) {
  Shape s = b.shape(v);
  Shape f(s.begin() + 1, s.end());
  f[0] *= s[0];
  return b.reshape(v, f);
}
ValueId unfold(Builder& b, ValueId v, int64_t size) {
  Shape s = b.shape(v);
  s[0] /= size;
  s.insert(s.begin(), size);
  return b.reshape(v, s);
}

// [B, N, C, ...] -> [N, B*C, ...]: each example's channels become a channel group.
ValueId to_groups(Builder& b, ValueId v) {
  ValueId t = move_axis(b, v, 0, 1);
  Shape s = b.shape(t);
  Shape g = s;
  g.erase(g.begin() + 1);
  g[1] *= s[1];
  return b.reshape(t, g);
}
// [N, B*C, ...] -> [B, N, C, ...].
ValueId from_groups(Builder& b, ValueId v, int64_t size) {
  Shape s = b.shape(v);
  s[1] /= size;
  s.insert(s.begin() + 1, size);
  return move_axis(b, b.reshape(v, s), 1, 0);
}

std::vector<Batched> batched(ValueId v) { return {{v, true}}; }

// The op applied to operands that all carry the batch, its result types with it.
std::vector<Batched> same_op(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                             const std::vector<ValueId>& operands, const ir::Attrs& attrs, int64_t size) {
  std::vector<TensorType> declared;
  for (const TensorType& t : types) declared.push_back(with_batch(t, size));
  std::vector<Batched> out;
  for (ValueId r : b.region().add(n.op, operands, attrs, declared)) out.push_back({r, true});
  return out;
}

std::vector<ValueId> lift_all(Builder& b, const std::vector<Batched>& ops, int64_t size) {
  std::vector<ValueId> ids;
  for (const Batched& o : ops) ids.push_back(lift(b, o, size));
  return ids;
}

// v with its last two axes swapped: a reshape when one of them has size 1.
ValueId swap_last2(Builder& b, ValueId v) {
  Shape s = b.shape(v);
  if (s[s.size() - 1] != 1 && s[s.size() - 2] != 1) return b.transpose_last2(v);
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return b.reshape(v, s);
}

std::vector<Batched> matmul(Builder& b, const ir::Node& n, const std::vector<Batched>& ops, int64_t size) {
  const Batched &x = ops[0], &w = ops[1];
  if (x.batched && !w.batched && b.shape(w.id).size() == 2) {
    // A shared matrix: the examples' rows are one taller product.
    Shape s = b.shape(x.id);
    ValueId rows = b.reshape(x.id, {product(s, 0, s.size() - 1), s.back()});
    ValueId p = b.op(Op::MatMul, {rows, w.id}, n.attrs);
    s.back() = b.shape(w.id)[1];
    return batched(b.reshape(p, s));
  }
  if (!x.batched && w.batched && b.shape(x.id).size() == 2) {
    // [m, k] x [B, ..., k, n], as the transpose of one taller product: the examples' columns as
    // rows, [B*...*n, k] x [k, m], so that the ops after it fuse into its epilogue.
    Shape ws = b.shape(w.id);
    ValueId rows = swap_last2(b, w.id);
    Shape rs = b.shape(rows);
    ValueId p = b.op(Op::MatMul, {b.reshape(rows, {product(rs, 0, rs.size() - 1), rs.back()}), b.transpose_last2(x.id)},
                     n.attrs);
    rs.back() = b.shape(x.id)[0];
    return batched(swap_last2(b, b.reshape(p, rs)));
  }
  return batched(b.op(n.op, lift_all(b, ops, size), n.attrs));
}

// conv2d(x, w), conv2d_input_grad(g, w): per-example images fold into the image axis; per-example
// weights make each example a channel group.
std::vector<Batched> conv(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                          const std::vector<Batched>& ops, int64_t size) {
  const TensorType& t = types[0];
  ValueId x = lift(b, ops[0], size);
  if (!ops[1].batched) {
    TensorType folded = t;
    folded.shape[0] *= size;
    return batched(unfold(b, b.op(n.op, {fold(b, x), ops[1].id}, n.attrs, {folded}), size));
  }
  ir::Attrs a = n.attrs;
  a.groups *= size;
  TensorType grouped = t;
  grouped.shape[1] *= size;
  return batched(from_groups(b, b.op(n.op, {to_groups(b, x), fold(b, ops[1].id)}, a, {grouped}), size));
}

// conv2d_weight_grad(x, g) sums over images, so the examples become channel groups.
std::vector<Batched> conv_weight_grad(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                                      const std::vector<Batched>& ops, int64_t size) {
  ir::Attrs a = n.attrs;
  a.groups *= size;
  TensorType grouped = types[0];
  grouped.shape[0] *= size;
  ValueId x = to_groups(b, lift(b, ops[0], size)), g = to_groups(b, lift(b, ops[1], size));
  return batched(unfold(b, b.op(n.op, {x, g}, a, {grouped}), size));
}

// Pooling and its gradients: every operand is per image, so the examples fold into images.
std::vector<Batched> pool(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                          const std::vector<Batched>& ops, int64_t size) {
  std::vector<ValueId> folded;
  for (ValueId v : lift_all(b, ops, size)) folded.push_back(fold(b, v));
  TensorType t = types[0];
  t.shape[0] *= size;
  return batched(unfold(b, b.op(n.op, folded, n.attrs, {t}), size));
}

// Indices per example into a table per example: example e's index i becomes e*D + clamp(i) into
// the examples' tables laid end to end along the axis, [Ap, B*D, Bp]. Returns those indices,
// flattened to [B*I].
ValueId offset_indices(Builder& b, ValueId idx, int64_t depth, int64_t size) {
  int64_t count = b.type(idx).numel() / size;
  TensorType t{DType::i32, {size, count}};
  ValueId i = b.reshape(idx, t.shape);
  i = b.op(Op::Max, {b.op(Op::Min, {i, b.splat(static_cast<double>(depth - 1), t)}), b.splat(0, t)});
  ir::Attrs a;
  a.axes = {0};
  ValueId row = b.mul(b.op(Op::Iota, {}, a, {t}), b.splat(static_cast<double>(depth), t));
  return b.reshape(b.add(i, row), {size * count});
}

std::vector<Batched> take(Builder& b, const ir::Node& n, const std::vector<Batched>& ops, int64_t size) {
  int64_t axis = n.attrs.axes[0];
  const Batched &x = ops[0], &idx = ops[1];
  if (!idx.batched) {
    ir::Attrs a = n.attrs;
    a.axes = {axis + 1};
    return batched(b.op(Op::Take, {x.id, idx.id}, a));
  }
  if (!x.batched) return batched(move_axis(b, b.op(Op::Take, {x.id, idx.id}, n.attrs), axis, 0));
  Shape xs = b.shape(x.id);  // [B, A..., D, R...]
  size_t d = static_cast<size_t>(axis) + 1;
  int64_t ap = product(xs, 1, d), depth = xs[d], rp = product(xs, d + 1, xs.size());
  ValueId table = b.reshape(move_axis(b, b.reshape(x.id, {size, ap, depth, rp}), 0, 1), {ap, size * depth, rp});
  ir::Attrs a;
  a.axes = {1};
  ValueId rows = b.op(Op::Take, {table, offset_indices(b, idx.id, depth, size)}, a);
  int64_t count = b.type(idx.id).numel() / size;
  Shape out(xs.begin(), xs.begin() + static_cast<long>(d));
  Shape is = b.shape(idx.id);
  out.insert(out.end(), is.begin() + 1, is.end());
  out.insert(out.end(), xs.begin() + static_cast<long>(d) + 1, xs.end());
  return batched(b.reshape(move_axis(b, b.reshape(rows, {ap, size, count, rp}), 1, 0), out));
}

std::vector<Batched> scatter_add(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                                 const std::vector<Batched>& ops, int64_t size) {
  int64_t axis = n.attrs.axes[0];
  const Batched &upd = ops[0], &idx = ops[1];
  if (!idx.batched) {
    ir::Attrs a = n.attrs;
    a.axes = {axis + 1};
    return same_op(b, n, types, {upd.id, idx.id}, a, size);
  }
  const Shape& rs = types[0].shape;  // [A..., D, R...]
  size_t d = static_cast<size_t>(axis);
  int64_t ap = product(rs, 0, d), depth = rs[d], rp = product(rs, d + 1, rs.size());
  int64_t count = b.type(idx.id).numel() / size;
  ValueId u = b.reshape(lift(b, upd, size), {size, ap, count, rp});
  u = b.reshape(move_axis(b, u, 0, 1), {ap, size * count, rp});
  ir::Attrs a;
  a.axes = {1};
  ValueId sums = b.op(Op::ScatterAdd, {u, offset_indices(b, idx.id, depth, size)}, a,
                      {TensorType{types[0].dtype, {ap, size * depth, rp}}});
  return batched(
      b.reshape(move_axis(b, b.reshape(sums, {ap, size, depth, rp}), 1, 0), with_batch(types[0], size).shape));
}

}  // namespace

std::vector<Batched> batch_node(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                                const std::vector<Batched>& ops, int64_t size) {
  ir::Attrs a = n.attrs;
  switch (ir::op_info(n.op).cls) {
    case ir::OpClass::Unary:
    case ir::OpClass::Binary:
    case ir::OpClass::Compare:
    case ir::OpClass::Select:
    case ir::OpClass::Convert:
    case ir::OpClass::Reshape: return same_op(b, n, types, lift_all(b, ops, size), a, size);
    case ir::OpClass::Reduce:
    case ir::OpClass::ArgReduce:
    case ir::OpClass::Concat:
    case ir::OpClass::Gather: a.axes = shifted(a.axes); return same_op(b, n, types, lift_all(b, ops, size), a, size);
    case ir::OpClass::Transpose:
      a.perm = shifted(a.perm);
      a.perm.insert(a.perm.begin(), 0);
      return same_op(b, n, types, {ops[0].id}, a, size);
    case ir::OpClass::Slice:
      a.starts.insert(a.starts.begin(), 0);
      a.limits.insert(a.limits.begin(), size);
      a.strides.insert(a.strides.begin(), 1);
      return same_op(b, n, types, {ops[0].id}, a, size);
    case ir::OpClass::Pad:
      a.padding.insert(a.padding.begin(), {0, 0});
      a.strides.insert(a.strides.begin(), 1);
      return same_op(b, n, types, {ops[0].id}, a, size);
    case ir::OpClass::Broadcast: {
      // Broadcasting right-aligns shapes: the operand's own dims go under the result's last
      // ones, with 1s between them and the batch.
      Shape s = b.shape(ops[0].id);
      s.insert(s.begin() + 1, types[0].shape.size() + 1 - s.size(), 1);
      return same_op(b, n, types, {b.reshape(ops[0].id, s)}, a, size);
    }
    case ir::OpClass::MatMul: return matmul(b, n, ops, size);
    case ir::OpClass::Conv: return conv(b, n, types, ops, size);
    case ir::OpClass::ConvGrad:
      return n.op == Op::Conv2dWeightGrad ? conv_weight_grad(b, n, types, ops, size) : conv(b, n, types, ops, size);
    case ir::OpClass::Pool:
    case ir::OpClass::PoolGrad: return pool(b, n, types, ops, size);
    case ir::OpClass::Take: return take(b, n, ops, size);
    case ir::OpClass::ScatterAdd: return scatter_add(b, n, types, ops, size);
    case ir::OpClass::Random:
    case ir::OpClass::RngFold: return per_example(b, n, types, ops, size);
    case ir::OpClass::Collective:
      if (n.op == Op::AllGather || n.op == Op::ReduceScatterSum) {
        // They stack and split dimension 0: the batch goes second for them.
        ValueId r = b.op(n.op, {move_axis(b, ops[0].id, 0, 1)}, a);
        return batched(move_axis(b, r, 1, 0));
      }
      return same_op(b, n, types, {ops[0].id}, a, size);
    case ir::OpClass::Debug: {
      // The whole batch is printed, each batched operand with the batch as its first axis.
      std::vector<ValueId> ids;
      for (const Batched& o : ops) ids.push_back(o.id);
      b.region().add(n.op, ids, a);
      return {};
    }
    default: break;
  }
  detail::fail("vmap", std::string("no batching rule for op ") + ir::op_name(n.op));
}

}  // namespace fluxion::batching
