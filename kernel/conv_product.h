// A convolution or one of its gradients as a (batched) matrix product C = A B whose operands
// are read as im2col, written once for every backend's matrix-product schedule (the Builder is
// lowering.h's). The tap arithmetic is gather_lowering.h's forward_tap and backward_tap, so the
// product reads exactly the elements the per-element form (lower_conv) reads. Only groups = 1
// (the fuser gives grouped convolutions the per-element form).
//
//   Conv2d            y[n, o, oh, ow]  = sum over (c, kh, kw) of w[o, c, kh, kw] x[n, c, h, w]
//   Conv2dInputGrad   dx[n, c, h, w]   = sum over (o, kh, kw) of w[o, c, kh, kw] g[n, o, oh, ow]
//   Conv2dWeightGrad  dw[o, c, kh, kw] = sum over (n, oh, ow) of g[n, o, oh, ow] x[n, c, h, w]
//
// A convolution and its input gradient are one product per image: rows are the result's
// channels, columns its pixels, and k runs over (the other side's channel, kernel tap). The
// weight gradient is one product: rows are output channels, columns (input channel, tap), and k
// runs over (image, output pixel). Either way k = k_outer * k_inner + k_row * k_cols + k_col
// with k_inner = k_rows * k_cols, so a schedule may block k by k_inner (a channel's taps, or an
// image's pixels) and walk the rows and columns of a block without dividing.
#pragma once

#include <array>
#include <vector>

#include "fluxion/error.h"
#include "ir/ir.h"
#include "kernel/gather_lowering.h"

namespace fluxion::kernel {

struct ConvProduct {
  int64_t batch = 0;  // products, one per image; 0: a single product without a batch index
  int64_t M = 0, N = 0;
  int64_t k_outer = 0, k_rows = 0, k_cols = 0;
  int64_t k_inner() const { return k_rows * k_cols; }
  int64_t K() const { return k_outer * k_inner(); }
};

inline ConvProduct conv_product(const ir::Region& r, const ir::Node& n) {
  const Shape& s1 = r.type(n.operands[1]).shape;
  const Shape& out = r.type(n.results[0]).shape;
  switch (n.op) {
    case ir::Op::Conv2d: return {out[0], s1[0], out[2] * out[3], s1[1], s1[2], s1[3]};
    case ir::Op::Conv2dInputGrad: return {out[0], s1[1], out[2] * out[3], s1[0], s1[2], s1[3]};
    case ir::Op::Conv2dWeightGrad: return {0, out[0], out[1] * out[2] * out[3], s1[0], s1[2], s1[3]};
    default: detail::fail(ir::op_name(n.op), "internal error: not a convolution");
  }
}

// A[i][k] for k = (k_outer, k_row, k_col) is operand 1 at {first, second, k_row, k_col}: a
// weight w[o, c, kh, kw] (a convolution: first = i; its input gradient: first = k_outer) or an
// output gradient g[n, o, oh, ow] (the weight gradient: first = k_outer). Its last two
// dimensions are the k grid, so a schedule that reads it from memory may step along k_inner.
template <class V>
std::array<V, 2> conv_product_a_leading(const ir::Node& n, V i, V k_outer) {
  if (n.op == ir::Op::Conv2d) return {i, k_outer};
  return {k_outer, i};
}

template <class Builder, class V>
V conv_product_a(Builder& b, const ir::Node& n, V i, V k_outer, V k_row, V k_col) {
  auto [first, second] = conv_product_a_leading(n, i, k_outer);
  return b.at(n.operands[1], {first, second, k_row, k_col});
}

// B[k][j] of product `image`, k = (k_outer, k_row, k_col): the element of im2col that column
// j reads, 0 where its tap falls outside the array read.
template <class Builder, class V>
V conv_product_b(Builder& b, const ir::Region& r, const ir::Node& n, V image, V k_outer, V k_row, V k_col, V j) {
  const ir::Attrs& a = n.attrs;
  ir::ValueId src = n.operands[0];
  const Shape& ss = r.type(src).shape;
  const Shape& out = r.type(n.results[0]).shape;
  auto read = [&](V i0, V i1, const Tap<V>& h, const Tap<V>& w) {
    V x = b.at(src, {i0, i1, h.pos, w.pos});
    if (h.always && w.always) return x;
    return b.select(b.logic_and(h.valid, w.valid), x, b.constant(r.type(src).dtype, 0));
  };
  if (n.op == ir::Op::Conv2dWeightGrad) {  // k = (image, output row, output column), j = (c, kh, kw)
    int64_t taps = out[2] * out[3];
    V c = b.bind(b.index_div(j, taps)), tap = b.bind(b.index_rem(j, taps));
    Tap<V> h = forward_tap(b, a, 0, k_row, b.index_div(tap, out[3]), ss[2]);
    Tap<V> w = forward_tap(b, a, 1, k_col, b.index_rem(tap, out[3]), ss[3]);
    return read(k_outer, c, h, w);
  }
  // j = (result row, result column), k = (channel, kh, kw)
  V row = b.bind(b.index_div(j, out[3])), col = b.bind(b.index_rem(j, out[3]));
  if (n.op == ir::Op::Conv2d)
    return read(image, k_outer, forward_tap(b, a, 0, row, k_row, ss[2]), forward_tap(b, a, 1, col, k_col, ss[3]));
  return read(image, k_outer, backward_tap(b, a, 0, row, k_row, ss[2]), backward_tap(b, a, 1, col, k_col, ss[3]));
}

// The result's index of C[image][i][j].
template <class Builder, class V>
std::vector<V> conv_product_c_index(Builder& b, const ir::Region& r, const ir::Node& n, V image, V i, V j) {
  const Shape& out = r.type(n.results[0]).shape;
  if (n.op != ir::Op::Conv2dWeightGrad) return {image, i, b.index_div(j, out[3]), b.index_rem(j, out[3])};
  int64_t taps = out[2] * out[3];
  V tap = b.bind(b.index_rem(j, taps));
  return {i, b.index_div(j, taps), b.index_div(tap, out[3]), b.index_rem(tap, out[3])};
}

}  // namespace fluxion::kernel
