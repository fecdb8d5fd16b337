// Ops computed one output element at a time by an inner loop over materialized operands:
// conv2d and its gradients, pooling and its gradients, argmax/argmin, random numbers, and the
// integer matmul. Written in gather form (each output element reads what contributes to it), so
// a kernel never scatters and parallel chunks never write the same element. The one exception,
// max-pooling gradients over exactly tiling windows, writes each window's elements from that
// window alone: windows do not overlap and never span two images, which is how threads split.
#include <algorithm>
#include <limits>

#include "backends/cpu/codegen.h"
#include "fluxion/error.h"

namespace fluxion::cpu {

using ir::Op;
using llvm::Value;

namespace {

// The input coordinate that window/tap offset k of output coordinate o reads, and whether it
// lies inside the input.
struct Tap {
  Value* pos;
  Value* valid;
};

}  // namespace

// Position (h, w) of the element max pooling selects in output (p0, p1, oh, ow)'s window: the
// first maximum, or the first NaN, in row-major window order; padding excluded.
std::pair<Value*, Value*> KernelEmitter::pool_select(ir::ValueId x, const Index& o, const ir::Attrs& a) {
  const Shape& xs = r_.type(x).shape;
  DType t = r_.type(x).dtype;
  // Without padding along a dimension every window lies inside the input (the output size is
  // what fits): no bounds check there.
  auto tap = [&](Value* out, int64_t stride, size_t d, Value* k, int64_t dim) {
    int64_t before = a.padding[2 * d], after = a.padding[2 * d + 1];
    Value* pos = b_.CreateAdd(b_.CreateSub(b_.CreateMul(out, i64(stride)), i64(before)), k);
    if (before == 0 && after == 0) return Tap{pos, b_.getTrue()};
    Value* valid = b_.CreateAnd(b_.CreateICmpSGE(pos, i64(0)), b_.CreateICmpSLT(pos, i64(dim)));
    return Tap{pos, valid};
  };
  std::vector<Value*> init{constant(t, 0), i64(0), i64(0), b_.getFalse()};
  auto res = emit_for(b_, i64(0), i64(a.window[0]), init, [&](Value* kh, const std::vector<Value*>& acc) {
    Tap th = tap(o[2], a.strides[0], 0, kh, xs[2]);
    return emit_for(b_, i64(0), i64(a.window[1]), acc, [&](Value* kw, const std::vector<Value*>& acc2) {
      Tap tw = tap(o[3], a.strides[1], 1, kw, xs[3]);
      Value* valid = b_.CreateAnd(th.valid, tw.valid);
      Value* h = b_.CreateSelect(valid, th.pos, i64(0));
      Value* w = b_.CreateSelect(valid, tw.pos, i64(0));
      Value* v = at(x, {o[0], o[1], h, w});
      Value* best = acc2[0];
      Value* found = acc2[3];
      Value* better = b_.CreateAnd(b_.CreateNot(is_nan(best)), b_.CreateOr(is_nan(v), b_.CreateFCmpOGT(v, best)));
      Value* take = b_.CreateAnd(valid, b_.CreateOr(b_.CreateNot(found), better));
      return std::vector<Value*>{b_.CreateSelect(take, v, best), b_.CreateSelect(take, h, acc2[1]),
                                 b_.CreateSelect(take, w, acc2[2]), b_.CreateOr(found, valid)};
    });
  });
  return {res[1], res[2]};
}

Value* KernelEmitter::conv(const ir::Node& n, const Index& o) {
  const ir::Attrs& a = n.attrs;
  DType t = r_.type(n.results[0]).dtype;
  ir::ValueId op0 = n.operands[0], op1 = n.operands[1];
  // Input coordinate read by output coordinate `out` through kernel offset k, with its validity.
  auto fwd = [&](Value* out, int d, Value* k, int64_t dim) {
    Value* pos = b_.CreateAdd(b_.CreateSub(b_.CreateMul(out, i64(a.strides[static_cast<size_t>(d)])),
                                           i64(a.padding[static_cast<size_t>(2 * d)])),
                              b_.CreateMul(k, i64(a.dilation[static_cast<size_t>(d)])));
    // Unpadded, every tap of every output lies inside the input (the output size is what fits).
    if (a.padding[static_cast<size_t>(2 * d)] == 0 && a.padding[static_cast<size_t>(2 * d + 1)] == 0) return Tap{pos, b_.getTrue()};
    Value* valid = b_.CreateAnd(b_.CreateICmpSGE(pos, i64(0)), b_.CreateICmpSLT(pos, i64(dim)));
    return Tap{b_.CreateSelect(valid, pos, i64(0)), valid};
  };
  // Output coordinate that reads input coordinate `in` through kernel offset k, if any.
  auto back = [&](Value* in, int d, Value* k, int64_t out_dim) {
    int64_t s = a.strides[static_cast<size_t>(d)];
    Value* t0 = b_.CreateSub(b_.CreateAdd(in, i64(a.padding[static_cast<size_t>(2 * d)])),
                             b_.CreateMul(k, i64(a.dilation[static_cast<size_t>(d)])));
    Value* q = b_.CreateSDiv(t0, i64(s));
    Value* valid = b_.CreateAnd(b_.CreateICmpSGE(t0, i64(0)), b_.CreateICmpEQ(b_.CreateSRem(t0, i64(s)), i64(0)));
    valid = b_.CreateAnd(valid, b_.CreateICmpSLT(q, i64(out_dim)));
    return Tap{b_.CreateSelect(valid, q, i64(0)), valid};
  };
  auto mac = [&](Value* acc, Value* valid, Value* x, Value* y) {
    return b_.CreateSelect(valid, b_.CreateFAdd(acc, b_.CreateFMul(x, y)), acc);
  };
  auto loop3 = [&](int64_t n0, int64_t n1, int64_t n2, const std::function<Value*(Value*, Value*, Value*, Value*)>& f) {
    if (n0 * n1 * n2 <= kernel::kMaxUnrolledTaps) {
      // Straight-line code: the kernel's innermost loop (output columns) then vectorises.
      Value* acc = constant(t, 0);
      for (int64_t i0 = 0; i0 < n0; ++i0) {
        for (int64_t i1 = 0; i1 < n1; ++i1) {
          for (int64_t i2 = 0; i2 < n2; ++i2) acc = f(i64(i0), i64(i1), i64(i2), acc);
        }
      }
      return acc;
    }
    return emit_for(b_, i64(0), i64(n0), {constant(t, 0)}, [&](Value* i0, const std::vector<Value*>& a0) {
      return emit_for(b_, i64(0), i64(n1), a0, [&](Value* i1, const std::vector<Value*>& a1) {
        return emit_for(b_, i64(0), i64(n2), a1, [&](Value* i2, const std::vector<Value*>& a2) {
          return std::vector<Value*>{f(i0, i1, i2, a2[0])};
        });
      });
    })[0];
  };
  if (n.op == Op::Conv2d) {  // x, w -> y[n, o, oh, ow]
    const Shape &xs = r_.type(op0).shape, &ws = r_.type(op1).shape;
    int64_t per_group = ws[0] / a.groups;
    Value* c0 = b_.CreateMul(b_.CreateSDiv(o[1], i64(per_group)), i64(ws[1]));
    // Without padding every tap is inside the input (fwd then returns it unclamped, always valid).
    bool unpadded = std::all_of(a.padding.begin(), a.padding.end(), [](int64_t p) { return p == 0; });
    return loop3(ws[1], ws[2], ws[3], [&](Value* c, Value* kh, Value* kw, Value* acc) -> Value* {
      Tap h = fwd(o[2], 0, kh, xs[2]), w = fwd(o[3], 1, kw, xs[3]);
      Value* x = at(op0, {o[0], b_.CreateAdd(c0, c), h.pos, w.pos});
      if (unpadded) return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {reg_type(c_, t)}, {x, at(op1, {o[1], c, kh, kw}), acc});
      return mac(acc, b_.CreateAnd(h.valid, w.valid), x, at(op1, {o[1], c, kh, kw}));
    });
  }
  if (n.op == Op::Conv2dInputGrad) {  // g, w -> dx[n, c, h, w]
    const Shape &gs = r_.type(op0).shape, &ws = r_.type(op1).shape;
    int64_t per_group = ws[0] / a.groups;
    Value* group = b_.CreateSDiv(o[1], i64(ws[1]));
    Value* cl = b_.CreateSRem(o[1], i64(ws[1]));
    Value* o0 = b_.CreateMul(group, i64(per_group));
    return loop3(per_group, ws[2], ws[3], [&](Value* oi, Value* kh, Value* kw, Value* acc) {
      Tap oh = back(o[2], 0, kh, gs[2]), ow = back(o[3], 1, kw, gs[3]);
      Value* oc = b_.CreateAdd(o0, oi);
      Value* g = at(op0, {o[0], oc, oh.pos, ow.pos});
      return mac(acc, b_.CreateAnd(oh.valid, ow.valid), g, at(op1, {oc, cl, kh, kw}));
    });
  }
  // Conv2dWeightGrad: x, g -> dw[o, c, kh, kw]
  const Shape &xs = r_.type(op0).shape, &gs = r_.type(op1).shape;
  const Shape& ws = r_.type(n.results[0]).shape;
  int64_t per_group = ws[0] / a.groups;
  Value* c0 = b_.CreateMul(b_.CreateSDiv(o[0], i64(per_group)), i64(ws[1]));
  return loop3(gs[0], gs[2], gs[3], [&](Value* bn, Value* oh, Value* ow, Value* acc) {
    Tap h = fwd(oh, 0, o[2], xs[2]), w = fwd(ow, 1, o[3], xs[3]);
    Value* x = at(op0, {bn, b_.CreateAdd(c0, o[1]), h.pos, w.pos});
    return mac(acc, b_.CreateAnd(h.valid, w.valid), x, at(op1, {bn, o[0], oh, ow}));
  });
}

Value* KernelEmitter::pool(const ir::Node& n, const Index& o) {
  const ir::Attrs& a = n.attrs;
  ir::ValueId res = n.results[0];
  DType t = r_.type(res).dtype;
  Value* area = constant(t, static_cast<double>(a.window[0] * a.window[1]));
  if (n.op == Op::MaxPool2dSelect) {
    auto [h, w] = pool_select(n.operands[0], o, a);
    return at(n.operands[1], {o[0], o[1], h, w});
  }
  if (n.op == Op::MaxPool2d || n.op == Op::AvgPool2d) {
    // The window folded by value: the first maximum (NaN if there is one), as pool_select
    // finds it but without its position, or the sum; padding excluded.
    bool max = n.op == Op::MaxPool2d;
    const Shape& xs = r_.type(n.operands[0]).shape;
    Value* init = constant(t, max ? -std::numeric_limits<double>::infinity() : 0.0);
    std::vector<Value*> folded = emit_for(b_, i64(0), i64(a.window[0]), {init, b_.getFalse()}, [&](Value* kh, const std::vector<Value*>& acc) {
      return emit_for(b_, i64(0), i64(a.window[1]), acc, [&](Value* kw, const std::vector<Value*>& acc2) {
        Value* h = b_.CreateAdd(b_.CreateSub(b_.CreateMul(o[2], i64(a.strides[0])), i64(a.padding[0])), kh);
        Value* w = b_.CreateAdd(b_.CreateSub(b_.CreateMul(o[3], i64(a.strides[1])), i64(a.padding[2])), kw);
        bool unpadded = std::all_of(a.padding.begin(), a.padding.end(), [](int64_t p) { return p == 0; });
        Value* valid = unpadded ? b_.getTrue()
                                : b_.CreateAnd(b_.CreateAnd(b_.CreateICmpSGE(h, i64(0)), b_.CreateICmpSLT(h, i64(xs[2]))),
                                               b_.CreateAnd(b_.CreateICmpSGE(w, i64(0)), b_.CreateICmpSLT(w, i64(xs[3]))));
        Value* x = at(n.operands[0], {o[0], o[1], b_.CreateSelect(valid, h, i64(0)), b_.CreateSelect(valid, w, i64(0))});
        if (!max) return std::vector<Value*>{b_.CreateSelect(valid, b_.CreateFAdd(acc2[0], x), acc2[0]), acc2[1]};
        // Strictly greater, so that of equal values (-0 and +0 among them) the first stays; a
        // NaN is noted on the side (off the chain of compares, which it would break).
        Value* take = b_.CreateAnd(valid, b_.CreateFCmpOGT(x, acc2[0]));
        return std::vector<Value*>{b_.CreateSelect(take, x, acc2[0]), b_.CreateOr(acc2[1], b_.CreateAnd(valid, is_nan(x)))};
      });
    });
    if (!max) return b_.CreateFDiv(folded[0], area);
    return b_.CreateSelect(folded[1], constant(t, std::numeric_limits<double>::quiet_NaN()), folded[0]);
  }
  // The gradients, in gather form: input element (p0, p1, h, w) sums over the windows that hold it.
  ir::ValueId g = n.operands[n.op == Op::MaxPool2dGrad ? 1 : 0];
  const Shape& gs = r_.type(g).shape;
  bool tiled = a.strides == a.window && std::all_of(a.padding.begin(), a.padding.end(), [](int64_t p) { return p == 0; });
  if (tiled) {
    // Windows that tile the input without overlap or padding: an element is in at most one.
    Value* oh = b_.CreateUDiv(o[2], i64(a.strides[0]));
    Value* ow = b_.CreateUDiv(o[3], i64(a.strides[1]));
    Value* inside = b_.CreateAnd(b_.CreateICmpSLT(oh, i64(gs[2])), b_.CreateICmpSLT(ow, i64(gs[3])));
    Index out{o[0], o[1], b_.CreateSelect(inside, oh, i64(0)), b_.CreateSelect(inside, ow, i64(0))};
    Value* gv = at(g, out);
    Value* zero = constant(t, 0);
    if (n.op == Op::AvgPool2dGrad) return b_.CreateSelect(inside, b_.CreateFDiv(gv, area), zero);
    auto [sh, sw] = pool_select(n.operands[0], out, a);
    Value* mine = b_.CreateAnd(inside, b_.CreateAnd(b_.CreateICmpEQ(sh, o[2]), b_.CreateICmpEQ(sw, o[3])));
    return b_.CreateSelect(mine, gv, zero);
  }
  auto window_of = [&](Value* in, int64_t stride, int64_t pad, Value* k, int64_t out_dim) {
    Value* t0 = b_.CreateSub(b_.CreateAdd(in, i64(pad)), k);
    Value* q = b_.CreateSDiv(t0, i64(stride));
    Value* valid = b_.CreateAnd(b_.CreateICmpSGE(t0, i64(0)), b_.CreateICmpEQ(b_.CreateSRem(t0, i64(stride)), i64(0)));
    valid = b_.CreateAnd(valid, b_.CreateICmpSLT(q, i64(out_dim)));
    return Tap{b_.CreateSelect(valid, q, i64(0)), valid};
  };
  return emit_for(b_, i64(0), i64(a.window[0]), {constant(t, 0)}, [&](Value* kh, const std::vector<Value*>& acc) {
    return emit_for(b_, i64(0), i64(a.window[1]), acc, [&](Value* kw, const std::vector<Value*>& acc2) {
      Tap oh = window_of(o[2], a.strides[0], a.padding[0], kh, gs[2]);
      Tap ow = window_of(o[3], a.strides[1], a.padding[2], kw, gs[3]);
      Value* valid = b_.CreateAnd(oh.valid, ow.valid);
      Index out{o[0], o[1], oh.pos, ow.pos};
      Value* gv = at(g, out);
      if (n.op == Op::AvgPool2dGrad) {
        return std::vector<Value*>{b_.CreateSelect(valid, b_.CreateFAdd(acc2[0], b_.CreateFDiv(gv, area)), acc2[0])};
      }
      auto [sh, sw] = pool_select(n.operands[0], out, a);
      Value* mine = b_.CreateAnd(valid, b_.CreateAnd(b_.CreateICmpEQ(sh, o[2]), b_.CreateICmpEQ(sw, o[3])));
      return std::vector<Value*>{b_.CreateSelect(mine, b_.CreateFAdd(acc2[0], gv), acc2[0])};
    });
  })[0];
}

// A max-pooling gradient whose windows tile the input exactly (stride = window, no padding,
// input size = windows x window) read element by element would find each element's window
// maximum again and compare positions, with gathers for every load. Run window by window
// instead: each window's first maximum (or first NaN) found once, by value,
// and its elements given the gradient or zero; the rest of the kernel then runs at each of
// them. The loop over window columns vectorises with interleaved loads and stores.
bool KernelEmitter::pool_grad_by_windows(Value* lo, Value* hi) {
  const ir::Node* grad = nullptr;
  for (size_t i : k_.nodes) {
    const ir::Node& n = r_.nodes[i];
    if (n.op != Op::MaxPool2dGrad || r_.type(n.results[0]).shape != k_.space) continue;
    const ir::Attrs& a = n.attrs;
    const Shape &xs = r_.type(n.operands[0]).shape, &gs = r_.type(n.operands[1]).shape;
    bool exact = a.strides == a.window && std::all_of(a.padding.begin(), a.padding.end(), [](int64_t p) { return p == 0; }) &&
                 xs[2] == gs[2] * a.window[0] && xs[3] == gs[3] * a.window[1];
    if (exact && is_float(r_.type(n.results[0]).dtype)) {
      grad = &n;
      break;
    }
  }
  if (!grad) return false;
  const ir::Attrs& a = grad->attrs;
  ir::ValueId x = grad->operands[0], g = grad->operands[1], res = grad->results[0];
  DType t = r_.type(res).dtype;
  int64_t wh = a.window[0], ww = a.window[1];
  // Window o: its first maximum (or first NaN) in row-major order, as pool_select finds it,
  // then the rest of the kernel at each of its elements.
  auto window = [&](const Index& o) {
    memo_.clear();
    auto pos = [&](int64_t kh, int64_t kw) {
      return Index{o[0], o[1], b_.CreateAdd(b_.CreateMul(o[2], i64(wh)), i64(kh)), b_.CreateAdd(b_.CreateMul(o[3], i64(ww)), i64(kw))};
    };
    Value* best = at(x, pos(0, 0));
    Value* which = i64(0);
    for (int64_t k = 1; k < wh * ww; ++k) {
      Value* v = at(x, pos(k / ww, k % ww));
      Value* better = b_.CreateAnd(b_.CreateNot(is_nan(best)), b_.CreateOr(is_nan(v), b_.CreateFCmpOGT(v, best)));
      best = b_.CreateSelect(better, v, best);
      which = b_.CreateSelect(better, i64(k), which);
    }
    Value* gv = at(g, o);
    for (int64_t k = 0; k < wh * ww; ++k) {
      Value* mine = b_.CreateSelect(b_.CreateICmpEQ(which, i64(k)), gv, constant(t, 0));
      body_at(pos(k / ww, k % ww), {{res, mine}});
    }
  };
  const Shape& gs = r_.type(g).shape;
  nest({gs[0], gs[1], gs[2]}, lo, hi, [&](const Index& row) {
    emit_for(b_, i64(0), i64(gs[3]), {}, [&](Value* col, const std::vector<Value*>&) {
      window({row[0], row[1], row[2], col});
      return std::vector<Value*>{};
    }, LoopHint::Vectorize);
  });
  return true;
}

Value* KernelEmitter::gathering(const ir::Node& n, const Index& o) {
  // Values computed inside an inner loop do not dominate the code after it.
  auto saved = memo_;
  Value* result = nullptr;
  ir::ValueId res = n.results[0];
  DType t = r_.type(res).dtype;
  switch (ir::op_info(n.op).cls) {
    case ir::OpClass::Conv:
    case ir::OpClass::ConvGrad: result = conv(n, o); break;
    case ir::OpClass::Pool:
    case ir::OpClass::PoolGrad: result = pool(n, o); break;
    case ir::OpClass::ArgReduce: {
      ir::ValueId x = n.operands[0];
      DType xt = r_.type(x).dtype;
      size_t ax = static_cast<size_t>(n.attrs.axes[0]);
      auto index_at = [&](Value* k) {
        Index i(o.begin(), o.begin() + static_cast<long>(ax));
        i.push_back(k);
        i.insert(i.end(), o.begin() + static_cast<long>(ax), o.end());
        return i;
      };
      Value* first = at(x, index_at(i64(0)));
      auto best = emit_for(b_, i64(1), i64(r_.type(x).shape[ax]), {first, i64(0)}, [&](Value* k, const std::vector<Value*>& acc) {
        Value* v = at(x, index_at(k));
        Value* better;
        if (is_float(xt)) {
          Value* cmp = n.op == Op::Argmax ? b_.CreateFCmpOGT(v, acc[0]) : b_.CreateFCmpOLT(v, acc[0]);
          better = b_.CreateAnd(b_.CreateNot(is_nan(acc[0])), b_.CreateOr(is_nan(v), cmp));
        } else {
          better = n.op == Op::Argmax ? b_.CreateICmpSGT(v, acc[0]) : b_.CreateICmpSLT(v, acc[0]);
        }
        return std::vector<Value*>{b_.CreateSelect(better, v, acc[0]), b_.CreateSelect(better, k, acc[1])};
      });
      result = b_.CreateTrunc(best[1], b_.getInt32Ty());
      break;
    }
    case ir::OpClass::Random:
    case ir::OpClass::RngFold: {
      ir::ValueId key = n.operands[0];
      Value* k0 = at(key, {i64(0)});
      Value* k1 = at(key, {i64(1)});
      if (n.op == Op::RngFold) {
        auto f = m_.getOrInsertFunction("fx_rng_fold", b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt64Ty());
        result = b_.CreateCall(f, {k0, k1, at(n.operands[1], {}), o[0]});
      } else {
        auto f = m_.getOrInsertFunction("fx_rng", b_.getDoubleTy(), b_.getInt32Ty(), b_.getInt32Ty(), b_.getInt64Ty(), b_.getInt32Ty());
        int kind = n.op == Op::RngNormal ? 2 : t == DType::f32 ? 0 : 1;
        Value* x = b_.CreateCall(f, {k0, k1, flat(o, r_.type(res).shape), b_.getInt32(static_cast<uint32_t>(kind))});
        result = t == DType::f32 ? b_.CreateFPTrunc(x, b_.getFloatTy()) : x;
      }
      break;
    }
    case ir::OpClass::MatMul: {
      ir::ValueId a = n.operands[0], bb = n.operands[1];
      size_t rank = o.size();
      int64_t k = r_.type(a).shape.back();
      result = emit_for(b_, i64(0), i64(k), {constant(t, 0)}, [&](Value* q, const std::vector<Value*>& acc) {
        Index ai(o.begin(), o.end() - 1), bi(o.begin(), o.end() - 2);
        ai.back() = o[rank - 2];
        ai.push_back(q);
        bi.push_back(q);
        bi.push_back(o[rank - 1]);
        Value* x = at(a, ai);
        Value* y = at(bb, bi);
        return std::vector<Value*>{is_float(t) ? b_.CreateFAdd(acc[0], b_.CreateFMul(x, y)) : b_.CreateAdd(acc[0], b_.CreateMul(x, y))};
      })[0];
      break;
    }
    default: detail::fail(ir::op_name(n.op), "internal error: no CPU code generation rule for this op");
  }
  memo_ = std::move(saved);
  return result;
}

}  // namespace fluxion::cpu
