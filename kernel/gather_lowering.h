// What one output element of a gathering op computes, written once for every backend (the
// Builder is lowering.h's): convolutions and their gradients, pooling and its gradients,
// argmax/argmin, random numbers, the integer matmul, and the identity and combine step of
// reductions. Every op is in gather form (each output element reads what contributes to it),
// so a kernel never scatters and parallel work never writes the same element. The rules that
// make the backends agree with the reference evaluator live here: taps outside the input read
// nothing, max pooling takes the first maximum in row-major window order or the first NaN,
// arg-reductions take the first extremum or the first NaN, and a NaN propagates through max
// and min reductions.
#pragma once

#include <algorithm>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

#include "fluxion/error.h"
#include "ir/ir.h"
#include "kernel/kernel_ir.h"
#include "kernel/lowering.h"

namespace fluxion::kernel {

// One spatial coordinate a tap reads, and whether it lies inside the array; `always`: known
// inside at compile time (valid is then not needed).
template <class V>
struct Tap {
  V pos;
  V valid;
  bool always;
};

// The input coordinate output coordinate `out` reads through tap k along spatial dimension d:
// out * stride - before + k * dilation, inside [0, dim) or replaced by 0.
template <class Builder, class V>
Tap<V> forward_tap(Builder& b, const ir::Attrs& a, size_t d, V out, V k, int64_t dim) {
  int64_t dilation = a.dilation.empty() ? 1 : a.dilation[d];
  V pos = b.index_add(index_affine(b, out, a.strides[d], -a.padding[2 * d]),
                      dilation == 1 ? k : b.index_mul(k, b.index(dilation)));
  // Unpadded, every tap of every output lies inside the input (the output size is what fits).
  if (a.padding[2 * d] == 0 && a.padding[2 * d + 1] == 0) return {pos, b.constant(DType::boolean, 1), true};
  pos = b.bind(pos);
  V valid = b.logic_and(b.index_compare(Compare::Ge, pos, b.index(0)), b.index_compare(Compare::Lt, pos, b.index(dim)));
  return {b.select(valid, pos, b.index(0)), valid, false};
}

// The output coordinate that reads input coordinate `in` through tap k along dimension d, if
// any: the inverse of forward_tap, valid where the stride divides exactly and the result lies
// inside [0, out_dim).
template <class Builder, class V>
Tap<V> backward_tap(Builder& b, const ir::Attrs& a, size_t d, V in, V k, int64_t out_dim) {
  int64_t stride = a.strides[d], dilation = a.dilation.empty() ? 1 : a.dilation[d];
  V shifted = b.bind(b.index_sub(index_affine(b, in, 1, a.padding[2 * d]), index_affine(b, k, dilation, 0)));
  V q = stride == 1 ? shifted : b.bind(b.index_div(shifted, stride));
  V valid = b.index_compare(Compare::Ge, shifted, b.index(0));
  if (stride != 1) valid = b.logic_and(valid, b.index_compare(Compare::Eq, b.index_rem(shifted, stride), b.index(0)));
  valid = b.logic_and(valid, b.index_compare(Compare::Lt, q, b.index(out_dim)));
  return {b.select(valid, q, b.index(0)), valid, false};
}

// acc + x * y where both taps are inside, acc elsewhere.
template <class Builder, class V>
V accumulate_tap(Builder& b, DType t, V acc, const Tap<V>& h, const Tap<V>& w, V x, V y) {
  V sum = b.mul_add(x, y, acc, t);
  if (h.always && w.always) return sum;
  return b.select(b.logic_and(h.valid, w.valid), sum, acc);
}

// The sum over i0 < n0, i1 < n1, i2 < n2 of f(i0, i1, i2, acc) folded into acc. Few taps are
// written out with constant indices (the CPU then vectorises the loop over output columns
// around them); more run as loops.
template <class Builder, class V>
V fold_taps(Builder& b, DType t, int64_t n0, int64_t n1, int64_t n2, const std::function<V(V, V, V, V)>& f) {
  if (n0 * n1 * n2 <= kMaxUnrolledTaps) {
    V acc = b.constant(t, 0);
    for (int64_t i0 = 0; i0 < n0; ++i0) {
      for (int64_t i1 = 0; i1 < n1; ++i1) {
        for (int64_t i2 = 0; i2 < n2; ++i2) acc = b.bind(f(b.index(i0), b.index(i1), b.index(i2), acc), t);
      }
    }
    return acc;
  }
  using C = Carried<V>;
  return b.loop(0, n0, {C::element(b.constant(t, 0), t)}, [&](V i0, const std::vector<V>& a0) {
    return b.loop(0, n1, {C::element(a0[0], t)}, [&](V i1, const std::vector<V>& a1) {
      return b.loop(0, n2, {C::element(a1[0], t)},
                    [&](V i2, const std::vector<V>& a2) { return std::vector<V>{f(i0, i1, i2, a2[0])}; });
    });
  })[0];
}

template <class Builder, class V>
V lower_conv(Builder& b, const ir::Region& r, const ir::Node& n, const std::vector<V>& o) {
  using ir::Op;
  const ir::Attrs& a = n.attrs;
  DType t = r.type(n.results[0]).dtype;
  ir::ValueId op0 = n.operands[0], op1 = n.operands[1];
  if (n.op == Op::Conv2d) {  // x, w -> y[n, o, oh, ow]
    const Shape &xs = r.type(op0).shape, &ws = r.type(op1).shape;
    int64_t per_group = ws[0] / a.groups;
    V c0 = b.bind(b.index_mul(b.index_div(o[1], per_group), b.index(ws[1])));
    return fold_taps<Builder, V>(b, t, ws[1], ws[2], ws[3], [&](V c, V kh, V kw, V acc) {
      Tap<V> h = forward_tap(b, a, 0, o[2], kh, xs[2]), w = forward_tap(b, a, 1, o[3], kw, xs[3]);
      V x = b.at(op0, {o[0], b.index_add(c0, c), h.pos, w.pos});
      return accumulate_tap(b, t, acc, h, w, x, b.at(op1, {o[1], c, kh, kw}));
    });
  }
  if (n.op == Op::Conv2dInputGrad) {  // g, w -> dx[n, c, h, w]
    const Shape &gs = r.type(op0).shape, &ws = r.type(op1).shape;
    int64_t per_group = ws[0] / a.groups;
    V first_out = b.bind(b.index_mul(b.index_div(o[1], ws[1]), b.index(per_group)));
    V channel = b.bind(b.index_rem(o[1], ws[1]));
    return fold_taps<Builder, V>(b, t, per_group, ws[2], ws[3], [&](V oi, V kh, V kw, V acc) {
      Tap<V> oh = backward_tap(b, a, 0, o[2], kh, gs[2]), ow = backward_tap(b, a, 1, o[3], kw, gs[3]);
      V oc = b.bind(b.index_add(first_out, oi));
      V g = b.at(op0, {o[0], oc, oh.pos, ow.pos});
      return accumulate_tap(b, t, acc, oh, ow, g, b.at(op1, {oc, channel, kh, kw}));
    });
  }
  if (n.op == Op::Conv2dWeightGrad) {  // x, g -> dw[o, c, kh, kw]
    const Shape &xs = r.type(op0).shape, &gs = r.type(op1).shape;
    const Shape& ws = r.type(n.results[0]).shape;
    int64_t per_group = ws[0] / a.groups;
    V c = b.bind(b.index_add(b.index_mul(b.index_div(o[0], per_group), b.index(ws[1])), o[1]));
    return fold_taps<Builder, V>(b, t, gs[0], gs[2], gs[3], [&](V bn, V oh, V ow, V acc) {
      Tap<V> h = forward_tap(b, a, 0, oh, o[2], xs[2]), w = forward_tap(b, a, 1, ow, o[3], xs[3]);
      V x = b.at(op0, {bn, c, h.pos, w.pos});
      return accumulate_tap(b, t, acc, h, w, x, b.at(op1, {bn, o[0], oh, ow}));
    });
  }
  detail::fail(ir::op_name(n.op), "internal error: not a convolution");
}

// Position (h, w) of the element max pooling selects in output o's window: the first maximum,
// or the first NaN, in row-major window order; padding excluded.
template <class Builder, class V>
std::pair<V, V> pool_select(Builder& b, const ir::Region& r, ir::ValueId x, const std::vector<V>& o,
                            const ir::Attrs& a) {
  const Shape& xs = r.type(x).shape;
  DType t = r.type(x).dtype;
  using C = Carried<V>;
  std::vector<C> init{C::element(b.constant(t, 0), t), C::of_index(b.index(0)), C::of_index(b.index(0)),
                      C::element(b.constant(DType::boolean, 0), DType::boolean)};
  auto res = b.loop(0, a.window[0], init, [&](V kh, const std::vector<V>& s) {
    Tap<V> th = forward_tap(b, a, 0, o[2], kh, xs[2]);
    std::vector<C> inner{C::element(s[0], t), C::of_index(s[1]), C::of_index(s[2]), C::element(s[3], DType::boolean)};
    return b.loop(0, a.window[1], inner, [&](V kw, const std::vector<V>& s2) {
      Tap<V> tw = forward_tap(b, a, 1, o[3], kw, xs[3]);
      V valid = b.logic_and(th.valid, tw.valid);
      V v = b.at(x, {o[0], o[1], th.pos, tw.pos});
      const V& best = s2[0];
      const V& found = s2[3];
      V better = b.logic_and(b.logic_not(b.is_nan(best)), b.logic_or(b.is_nan(v), b.compare(Compare::Gt, v, best, t)));
      V take = b.logic_and(valid, b.logic_or(b.logic_not(found), better));
      return std::vector<V>{b.select(take, v, best), b.select(take, th.pos, s2[1]), b.select(take, tw.pos, s2[2]),
                            b.logic_or(found, valid)};
    });
  });
  return {res[1], res[2]};
}

template <class Builder, class V>
V lower_pool(Builder& b, const ir::Region& r, const ir::Node& n, const std::vector<V>& o) {
  using ir::Op;
  using C = Carried<V>;
  const ir::Attrs& a = n.attrs;
  DType t = r.type(n.results[0]).dtype;
  V area = b.constant(t, static_cast<double>(a.window[0] * a.window[1]));
  bool unpadded = std::all_of(a.padding.begin(), a.padding.end(), [](int64_t p) { return p == 0; });
  if (n.op == Op::MaxPool2dSelect) {
    auto [h, w] = pool_select(b, r, n.operands[0], o, a);
    return b.at(n.operands[1], {o[0], o[1], h, w});
  }
  if (n.op == Op::MaxPool2d || n.op == Op::AvgPool2d) {
    // The window folded by value: the first maximum (NaN if there is one), as pool_select finds
    // it but without its position, or the sum; padding excluded.
    bool max = n.op == Op::MaxPool2d;
    const Shape& xs = r.type(n.operands[0]).shape;
    V lowest = b.constant(t, max ? -std::numeric_limits<double>::infinity() : 0.0);
    std::vector<C> init{C::element(lowest, t), C::element(b.constant(DType::boolean, 0), DType::boolean)};
    auto folded = b.loop(0, a.window[0], init, [&](V kh, const std::vector<V>& s) {
      Tap<V> th = forward_tap(b, a, 0, o[2], kh, xs[2]);
      return b.loop(
          0, a.window[1], {C::element(s[0], t), C::element(s[1], DType::boolean)}, [&](V kw, const std::vector<V>& s2) {
            Tap<V> tw = forward_tap(b, a, 1, o[3], kw, xs[3]);
            V valid = b.logic_and(th.valid, tw.valid);
            V x = b.at(n.operands[0], {o[0], o[1], th.pos, tw.pos});
            if (!max)
              return std::vector<V>{unpadded ? b.add(s2[0], x, t) : b.select(valid, b.add(s2[0], x, t), s2[0]), s2[1]};
            // Strictly greater, so that of equal values (-0 and +0 among them) the first stays; a
            // NaN is noted on the side (off the chain of compares, which it would break).
            V take = b.logic_and(valid, b.compare(Compare::Gt, x, s2[0], t));
            return std::vector<V>{b.select(take, x, s2[0]), b.logic_or(s2[1], b.logic_and(valid, b.is_nan(x)))};
          });
    });
    if (!max) return b.fdiv(folded[0], area, t);
    return b.select(folded[1], b.constant(t, std::numeric_limits<double>::quiet_NaN()), folded[0]);
  }
  // The gradients, in gather form: input element (p0, p1, h, w) sums over the windows that hold it.
  ir::ValueId g = n.operands[n.op == Op::MaxPool2dGrad ? 1 : 0];
  const Shape& gs = r.type(g).shape;
  // Whether input element o is the one output window `out` selects.
  auto selected = [&](const std::vector<V>& out) {
    auto [sh, sw] = pool_select(b, r, n.operands[0], out, a);
    return b.logic_and(b.index_compare(Compare::Eq, sh, o[2]), b.index_compare(Compare::Eq, sw, o[3]));
  };
  if (a.strides == a.window && unpadded) {
    // Windows that tile the input without overlap or padding: an element is in at most one.
    V oh = b.bind(b.index_div(o[2], a.strides[0])), ow = b.bind(b.index_div(o[3], a.strides[1]));
    V inside =
        b.logic_and(b.index_compare(Compare::Lt, oh, b.index(gs[2])), b.index_compare(Compare::Lt, ow, b.index(gs[3])));
    std::vector<V> out{o[0], o[1], b.select(inside, oh, b.index(0)), b.select(inside, ow, b.index(0))};
    V gv = b.at(g, out);
    if (n.op == Op::AvgPool2dGrad) return b.select(inside, b.fdiv(gv, area, t), b.constant(t, 0));
    return b.select(b.logic_and(inside, selected(out)), gv, b.constant(t, 0));
  }
  return b.loop(0, a.window[0], {C::element(b.constant(t, 0), t)}, [&](V kh, const std::vector<V>& s) {
    Tap<V> oh = backward_tap(b, a, 0, o[2], kh, gs[2]);
    return b.loop(0, a.window[1], {C::element(s[0], t)}, [&](V kw, const std::vector<V>& s2) {
      Tap<V> ow = backward_tap(b, a, 1, o[3], kw, gs[3]);
      V valid = b.logic_and(oh.valid, ow.valid);
      std::vector<V> out{o[0], o[1], oh.pos, ow.pos};
      V gv = b.at(g, out);
      if (n.op == Op::AvgPool2dGrad)
        return std::vector<V>{b.select(valid, b.add(s2[0], b.fdiv(gv, area, t), t), s2[0])};
      return std::vector<V>{b.select(b.logic_and(valid, selected(out)), b.add(s2[0], gv, t), s2[0])};
    });
  })[0];
}

// Argmax / argmin along one axis: the first extremum, or the first NaN, as an i32.
template <class Builder, class V>
V lower_argreduce(Builder& b, const ir::Region& r, const ir::Node& n, const std::vector<V>& o) {
  using C = Carried<V>;
  ir::ValueId x = n.operands[0];
  DType xt = r.type(x).dtype;
  size_t ax = static_cast<size_t>(n.attrs.axes[0]);
  auto index_at = [&](V k) {
    std::vector<V> i(o.begin(), o.begin() + static_cast<long>(ax));
    i.push_back(k);
    i.insert(i.end(), o.begin() + static_cast<long>(ax), o.end());
    return i;
  };
  Compare beats = n.op == ir::Op::Argmax ? Compare::Gt : Compare::Lt;
  std::vector<C> init{C::element(b.at(x, index_at(b.index(0))), xt), C::of_index(b.index(0))};
  auto best = b.loop(1, r.type(x).shape[ax], init, [&](V k, const std::vector<V>& s) {
    V v = b.at(x, index_at(k));
    V better = b.compare(beats, v, s[0], xt);
    if (is_float(xt)) better = b.logic_and(b.logic_not(b.is_nan(s[0])), b.logic_or(b.is_nan(v), better));
    return std::vector<V>{b.select(better, v, s[0]), b.select(better, k, s[1])};
  });
  return b.index_to_element(best[1], DType::i32);
}

// rng_uniform and rng_normal: element o's number from the counter at its row-major position;
// rng_fold: word o[0] of the block at the folded-in datum.
template <class Builder, class V>
V lower_random(Builder& b, const ir::Region& r, const ir::Node& n, const std::vector<V>& o) {
  ir::ValueId key = n.operands[0];
  V k0 = b.at(key, {b.index(0)}), k1 = b.at(key, {b.index(1)});
  if (n.op == ir::Op::RngFold) return b.rng_fold(k0, k1, b.at(n.operands[1], {}), o[0]);
  const TensorType& t = r.type(n.results[0]);
  return b.random(n.op, t.dtype, k0, k1, flat_index(b, o, t.shape));
}

// The matrix product of integers (floats take the backends' matmul schedules).
template <class Builder, class V>
V lower_int_matmul(Builder& b, const ir::Region& r, const ir::Node& n, const std::vector<V>& o) {
  ir::ValueId x = n.operands[0], y = n.operands[1];
  DType t = r.type(n.results[0]).dtype;
  size_t rank = o.size();
  return b.loop(0, r.type(x).shape.back(), {Carried<V>::element(b.constant(t, 0), t)},
                [&](V q, const std::vector<V>& s) {
                  std::vector<V> xi(o.begin(), o.end() - 1), yi(o.begin(), o.end() - 2);
                  xi.back() = o[rank - 2];
                  xi.push_back(q);
                  yi.push_back(q);
                  yi.push_back(o[rank - 1]);
                  return std::vector<V>{b.mul_add(b.at(x, xi), b.at(y, yi), s[0], t)};
                })[0];
}

// Output element o of gathering node n.
template <class Builder, class V>
V lower_gathering(Builder& b, const ir::Region& r, const ir::Node& n, const std::vector<V>& o) {
  switch (ir::op_info(n.op).cls) {
    case ir::OpClass::Conv:
    case ir::OpClass::ConvGrad: return lower_conv(b, r, n, o);
    case ir::OpClass::Pool:
    case ir::OpClass::PoolGrad: return lower_pool(b, r, n, o);
    case ir::OpClass::ArgReduce: return lower_argreduce(b, r, n, o);
    case ir::OpClass::Random:
    case ir::OpClass::RngFold: return lower_random(b, r, n, o);
    case ir::OpClass::MatMul: return lower_int_matmul(b, r, n, o);
    default: break;
  }
  detail::fail(ir::op_name(n.op), "internal error: no per-element lowering for this op");
}

// A reduction's starting value: the identity of its combine step.
template <class Builder>
auto reduce_identity(Builder& b, ir::Op op, DType t) {
  double inf = std::numeric_limits<double>::infinity();
  bool integer = t == DType::i32;
  switch (op) {
    case ir::Op::ReduceMax: return b.constant(t, integer ? std::numeric_limits<int32_t>::min() : -inf);
    case ir::Op::ReduceMin: return b.constant(t, integer ? std::numeric_limits<int32_t>::max() : inf);
    default: return b.constant(t, 0);
  }
}

// A reduction's combine step; max and min propagate NaN.
template <class Builder, class V>
V combine(Builder& b, ir::Op op, DType t, V acc, V x) {
  switch (op) {
    case ir::Op::ReduceMax: return b.max(acc, x, t);
    case ir::Op::ReduceMin: return b.min(acc, x, t);
    default: return b.sum(acc, x, t);
  }
}

}  // namespace fluxion::kernel
