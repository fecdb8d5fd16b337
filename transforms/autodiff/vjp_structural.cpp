// Reverse rules of reductions, matmul and data movement. Each sends the result's adjoint g
// back to the operand's shape: the transpose of the op's linear map.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>

#include "fluxion/error.h"
#include "transforms/autodiff/vjp_rules.h"

namespace fluxion::autodiff {
namespace {

using ir::Op;
using ir::ValueId;

// max/min reductions: the adjoint is shared equally among the elements equal to the extreme.
ValueId reduce_extreme(Builder& b, const ir::Node& n, ValueId g) {
  ValueId x = n.operands[0];
  const Shape& s = b.shape(x);
  const std::vector<int64_t>& axes = n.attrs.axes;
  ValueId hit = b.binary(Op::Eq, x, b.expand_reduced(n.results[0], axes, s));
  ValueId count = b.reduce_sum(b.convert(hit, b.type(g).dtype), axes);
  return b.mask(hit, b.expand_reduced(b.div(g, count), axes, s));
}

// The transpose of slice: g placed back at the sliced positions, zeros elsewhere.
ValueId unslice(Builder& b, const ir::Node& n, ValueId g) {
  const Shape& s = b.shape(n.operands[0]);
  const Shape& gs = b.shape(g);
  ir::Attrs a;
  a.strides = n.attrs.strides;
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t spread = gs[d] == 0 ? 0 : (gs[d] - 1) * a.strides[d] + 1;
    a.padding.push_back(n.attrs.starts[d]);
    a.padding.push_back(s[d] - n.attrs.starts[d] - spread);
  }
  return b.op(Op::Pad, {g}, std::move(a));
}

// The transpose of pad: the positions the operand was placed at.
ValueId unpad(Builder& b, const ir::Node& n, ValueId g) {
  const Shape& s = b.shape(n.operands[0]);
  ir::Attrs a;
  a.strides = n.attrs.strides;
  for (size_t d = 0; d < s.size(); ++d) {
    int64_t lo = n.attrs.padding[2 * d];
    a.starts.push_back(lo);
    a.limits.push_back(lo + (s[d] == 0 ? 0 : (s[d] - 1) * a.strides[d] + 1));
  }
  return b.op(Op::Slice, {g}, std::move(a));
}

// conv2d's input gradient. The direct form, conv2d_input_grad, is one product per image: with
// stride 1 it is a correlation of the padded output gradient with the flipped weights, which
// the CPU runs as sliding windows without im2col. With a larger stride its im2col operand is
// gathered (with bounds checks) while packing; each packed element is reused once per input
// channel, so with few input channels packing costs more than the multiply-adds. Then the
// gradient is taken as col2im instead: one plain matmul W^T g per image (every weight tap
// against every output pixel, no gathering) and a sum of each tap's columns placed where that
// tap read its input (pad with the conv's strides), which fuses into one elementwise kernel.
// Used when the columns are small enough and every tap lands inside the input (no conv padding
// cut off); else the direct form.
constexpr int64_t kCol2imMaxChannels = 16;
constexpr int64_t kCol2imMaxBytes = int64_t{64} << 20;

ValueId conv_input_grad(Builder& b, const ir::Attrs& at, ValueId g, ValueId w, const TensorType& xt) {
  auto direct = [&] { return b.op(Op::Conv2dInputGrad, {g, w}, at, {xt}); };
  Shape ws = b.shape(w), gs = b.shape(g);
  int64_t O = ws[0], C = ws[1], KH = ws[2], KW = ws[3], N = gs[0], OH = gs[2], OW = gs[3];
  int64_t taps = KH * KW;
  bool unit_stride = std::all_of(at.strides.begin(), at.strides.end(), [](int64_t s) { return s == 1; });
  if (at.groups != 1 || unit_stride || C >= kCol2imMaxChannels || N * O * OH * OW == 0 ||
      N * taps * C * OH * OW * dtype_size(xt.dtype) > kCol2imMaxBytes)
    return direct();
  // Where tap (kh, kw)'s columns go: padding before and after along H and W.
  auto placement = [&](int64_t k, int d, int64_t out, int64_t in) {
    int64_t lo = k * at.dilation[static_cast<size_t>(d)] - at.padding[static_cast<size_t>(2 * d)];
    return std::make_pair(lo, in - lo - ((out - 1) * at.strides[static_cast<size_t>(d)] + 1));
  };
  for (int64_t kh : {int64_t{0}, KH - 1})
    for (int64_t kw : {int64_t{0}, KW - 1}) {
      auto [hl, hh] = placement(kh, 0, OH, xt.shape[2]);
      auto [wl, wh] = placement(kw, 1, OW, xt.shape[3]);
      if (hl < 0 || hh < 0 || wl < 0 || wh < 0) return direct();
    }
  ValueId wt = b.reshape(b.transpose(w, {2, 3, 1, 0}), {taps * C, O});  // [kh, kw, c] x o
  ValueId cols = b.op(Op::MatMul, {b.broadcast(wt, {N, taps * C, O}), b.reshape(g, {N, O, OH * OW})});
  cols = b.reshape(cols, {N, taps, C, OH, OW});
  std::vector<ValueId> parts;
  for (int64_t t = 0; t < taps; ++t) {
    ir::Attrs slice;
    slice.starts = {0, t, 0, 0, 0};
    slice.limits = {N, t + 1, C, OH, OW};
    slice.strides = {1, 1, 1, 1, 1};
    ValueId tap = b.reshape(b.op(Op::Slice, {cols}, std::move(slice)), {N, C, OH, OW});
    auto [hl, hh] = placement(t / KW, 0, OH, xt.shape[2]);
    auto [wl, wh] = placement(t % KW, 1, OW, xt.shape[3]);
    ir::Attrs pad;
    pad.strides = {1, 1, at.strides[0], at.strides[1]};
    pad.padding = {0, 0, 0, 0, hl, hh, wl, wh};
    parts.push_back(b.op(Op::Pad, {tap}, std::move(pad)));
  }
  return b.sum_all(parts);
}

ValueId concat_part(Builder& b, const ir::Node& n, ValueId g, size_t part) {
  int64_t ax = n.attrs.axes[0];
  int64_t offset = 0;
  for (size_t i = 0; i < part; ++i) offset += b.shape(n.operands[i])[static_cast<size_t>(ax)];
  const Shape& gs = b.shape(g);
  ir::Attrs a;
  a.starts.assign(gs.size(), 0);
  a.limits = gs;
  a.strides.assign(gs.size(), 1);
  a.starts[static_cast<size_t>(ax)] = offset;
  a.limits[static_cast<size_t>(ax)] = offset + b.shape(n.operands[part])[static_cast<size_t>(ax)];
  return b.op(Op::Slice, {g}, std::move(a));
}

// Indices clamped into [0, dim - 1], as the forward gather/take read them.
ValueId clamp_indices(Builder& b, ValueId idx, int64_t dim) {
  return b.binary(Op::Max, b.binary(Op::Min, idx, b.splat_like(static_cast<double>(dim - 1), idx)), b.splat_like(0, idx));
}

// take_along_axis, with x and the indices seen as [A, D, B] and [A, J, B]: dx[a, c, b] is the sum
// of g[a, j, b] over the j with clamp(idx[a, j, b]) == c. One scatter_add over x's flat
// positions: element (a, j, b) of g goes to (a * D + clamp(idx[a, j, b])) * B + b.
ValueId ungather(Builder& b, const ir::Node& n, ValueId g) {
  size_t ax = static_cast<size_t>(n.attrs.axes[0]);
  Shape xs = b.shape(n.operands[0]);
  Shape is = b.shape(n.operands[1]);
  int64_t dim = xs[ax];
  if (numel(xs) > std::numeric_limits<int32_t>::max()) {
    detail::fail("gather", "the gradient of a gather from " + shape_str(xs) +
                               " is not built: its flat positions do not fit in i32");
  }
  Shape s3{numel(Shape(is.begin(), is.begin() + static_cast<long>(ax))), is[ax],
           numel(Shape(is.begin() + static_cast<long>(ax) + 1, is.end()))};
  auto position = [&](int64_t axis) {
    ir::Attrs iota;
    iota.axes = {axis};
    return b.op(Op::Iota, {}, std::move(iota), {TensorType{DType::i32, s3}});
  };
  ValueId row = b.reshape(clamp_indices(b, n.operands[1], dim), s3);
  row = b.add(b.mul(position(0), b.splat_like(static_cast<double>(dim), row)), row);
  ValueId target = b.add(b.mul(row, b.splat_like(static_cast<double>(s3[2]), row)), position(2));
  ir::Attrs a;
  a.axes = {0};
  ValueId flat = b.op(Op::ScatterAdd, {b.reshape(g, {numel(is)}), b.reshape(target, {numel(is)})}, std::move(a),
                      {TensorType{b.type(g).dtype, {numel(xs)}}});
  return b.reshape(flat, xs);
}

// index_select: dx = scatter_add(g, idx), the rows of g added into the rows of x they were taken
// from, in index order (scatter_add clamps the indices as take does).
ValueId untake(Builder& b, const ir::Node& n, ValueId g) {
  return b.op(Op::ScatterAdd, {g, n.operands[1]}, n.attrs, {b.type(n.operands[0])});
}

}  // namespace

std::vector<ValueId> vjp_structural(Builder& b, const ir::Node& n, ValueId g, const std::vector<bool>& want) {
  std::vector<ValueId> out(n.operands.size(), -1);
  auto set = [&](size_t i, auto make) {
    if (want[i]) out[i] = make();
  };
  ValueId x = n.operands[0];
  switch (n.op) {
    case Op::ReduceSum: set(0, [&] { return b.expand_reduced(g, n.attrs.axes, b.shape(x)); }); break;
    case Op::ReduceMax:
    case Op::ReduceMin: set(0, [&] { return reduce_extreme(b, n, g); }); break;
    case Op::MatMul:
      // The gradient's products keep the product's attributes: a permission to sum in f16
      // given to the forward product is given to its backward products too.
      set(0, [&] { return b.op(Op::MatMul, {g, b.transpose_last2(n.operands[1])}, n.attrs); });
      set(1, [&] { return b.op(Op::MatMul, {b.transpose_last2(x), g}, n.attrs); });
      break;
    case Op::Reshape: set(0, [&] { return b.reshape(g, b.shape(x)); }); break;
    case Op::Transpose:
      set(0, [&] {
        std::vector<int64_t> inverse(n.attrs.perm.size());
        for (size_t i = 0; i < inverse.size(); ++i) inverse[static_cast<size_t>(n.attrs.perm[i])] = static_cast<int64_t>(i);
        return b.transpose(g, inverse);
      });
      break;
    case Op::Broadcast: set(0, [&] { return b.unbroadcast(g, b.shape(x)); }); break;
    case Op::Slice: set(0, [&] { return unslice(b, n, g); }); break;
    case Op::Pad: set(0, [&] { return unpad(b, n, g); }); break;
    case Op::Concat:
      for (size_t i = 0; i < n.operands.size(); ++i) set(i, [&] { return concat_part(b, n, g, i); });
      break;
    // conv2d and its gradients are bilinear and transposes of each other, so the rules close
    // over the three ops (grad of grad works).
    case Op::Conv2d:
      set(0, [&] { return conv_input_grad(b, n.attrs, g, n.operands[1], b.type(x)); });
      set(1, [&] { return b.op(Op::Conv2dWeightGrad, {x, g}, n.attrs, {b.type(n.operands[1])}); });
      break;
    case Op::Conv2dInputGrad:  // (g, w) -> dx
      set(0, [&] { return b.op(Op::Conv2d, {g, n.operands[1]}, n.attrs); });
      set(1, [&] { return b.op(Op::Conv2dWeightGrad, {g, x}, n.attrs, {b.type(n.operands[1])}); });
      break;
    case Op::Conv2dWeightGrad:  // (x, g) -> dw
      set(0, [&] { return conv_input_grad(b, n.attrs, n.operands[1], g, b.type(x)); });
      set(1, [&] { return b.op(Op::Conv2d, {x, g}, n.attrs); });
      break;
    // The max-pooling ops are linear in their second operand and piecewise constant in x.
    case Op::MaxPool2d: set(0, [&] { return b.op(Op::MaxPool2dGrad, {x, g}, n.attrs); }); break;
    case Op::MaxPool2dGrad: set(1, [&] { return b.op(Op::MaxPool2dSelect, {x, g}, n.attrs); }); break;
    case Op::MaxPool2dSelect: set(1, [&] { return b.op(Op::MaxPool2dGrad, {x, g}, n.attrs); }); break;
    case Op::AvgPool2d: set(0, [&] { return b.op(Op::AvgPool2dGrad, {g}, n.attrs, {b.type(x)}); }); break;
    case Op::AvgPool2dGrad: set(0, [&] { return b.op(Op::AvgPool2d, {g}, n.attrs); }); break;
    case Op::Gather: set(0, [&] { return ungather(b, n, g); }); break;
    case Op::Take: set(0, [&] { return untake(b, n, g); }); break;
    // Linear in the updates, whose adjoint is g read back at the indices: take's.
    case Op::ScatterAdd: set(0, [&] { return b.op(Op::Take, {g, n.operands[1]}, n.attrs); }); break;
    default:
      detail::fail(ir::op_name(n.op), "reverse-mode differentiation through this op is not built yet");
  }
  return out;
}

}  // namespace fluxion::autodiff
