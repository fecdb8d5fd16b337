// The operands of the MatMul kernel (gemm.cpp) as accessors: a matmul's through the strided
// views it reads (matmul_gemm), a convolution's and its gradients' as im2col (conv_gemm).
#include "backends/cpu/codegen.h"
#include "fluxion/error.h"

namespace fluxion::cpu {

using llvm::Value;

namespace {
constexpr int64_t kBlockK = 256;  // k-block length of a matmul: a packed panel stays in L1
}  // namespace

std::vector<Value*> KernelEmitter::transpose_square(std::vector<Value*> rows) {
  int W = static_cast<int>(rows.size());
  for (int half = W / 2; half >= 1; half /= 2) {
    for (int i = 0; i < W; ++i) {
      if (i & half) continue;
      std::vector<int> lo(static_cast<size_t>(W)), hi(static_cast<size_t>(W));
      for (int p = 0; p < W; ++p) {
        lo[static_cast<size_t>(p)] = (p & half) ? W + p - half : p;
        hi[static_cast<size_t>(p)] = (p & half) ? W + p : p + half;
      }
      Value* a = rows[static_cast<size_t>(i)];
      Value* c = rows[static_cast<size_t>(i + half)];
      rows[static_cast<size_t>(i)] = builder_.CreateShuffleVector(a, c, lo);
      rows[static_cast<size_t>(i + half)] = builder_.CreateShuffleVector(a, c, hi);
    }
  }
  return rows;
}

KernelEmitter::Gemm KernelEmitter::matmul_gemm() {
  const ir::Node& n = region_.nodes[kernel_.root];
  const Shape& cs = region_.type(n.results[0]).shape;
  size_t rank = cs.size();
  kernel::StridedView av, bv;
  if (!kernel::matmul_operands(region_, schedule_, kernel_, &av, &bv))
    detail::fail("matmul", "internal error: operands are not strided views");
  Gemm g;
  g.batch.assign(cs.begin(), cs.end() - 2);
  g.M = cs[rank - 2];
  g.N = cs[rank - 1];
  g.K = region_.type(n.operands[0]).shape.back();
  g.kc = std::min(kBlockK, std::max<int64_t>(1, g.K));
  g.blocks = std::max<int64_t>(1, (g.K + g.kc - 1) / g.kc);
  g.b_rows_contiguous = bv.strides[rank - 1] == 1;
  DType t = region_.type(n.results[0]).dtype;
  auto strided = [this, rank, t](const kernel::StridedView& v, const Index& b, Value* i, Value* j) {
    Value* off = i64(v.offset);
    for (size_t d = 0; d < b.size(); ++d) off = builder_.CreateAdd(off, builder_.CreateMul(b[d], i64(v.strides[d])));
    off = builder_.CreateAdd(off, builder_.CreateMul(i, i64(v.strides[rank - 2])));
    off = builder_.CreateAdd(off, builder_.CreateMul(j, i64(v.strides[rank - 1])));
    return builder_.CreateLoad(reg_type(context_, t),
                               builder_.CreateInBoundsGEP(reg_type(context_, t), pointer(v.base), off));
  };
  int64_t kc = g.kc;
  g.a = [=, this](const Index& b, Value* i, Value* kb, Value* kk) {
    return strided(av, b, i, builder_.CreateAdd(builder_.CreateMul(kb, i64(kc)), kk));
  };
  g.b = [=, this](const Index& b, Value* kb, Value* kk, Value* j) {
    return strided(bv, b, builder_.CreateAdd(builder_.CreateMul(kb, i64(kc)), kk), j);
  };
  if (av.strides[rank - 1] == 1) {
    g.a_row_address = [=, this](const Index& b, Value* i, Value* k) {
      Value* off = i64(av.offset);
      for (size_t d = 0; d < b.size(); ++d) off = builder_.CreateAdd(off, builder_.CreateMul(b[d], i64(av.strides[d])));
      off = builder_.CreateAdd(off, builder_.CreateAdd(builder_.CreateMul(i, i64(av.strides[rank - 2])), k));
      return builder_.CreateInBoundsGEP(reg_type(context_, t), pointer(av.base), off);
    };
  }
  if (bv.strides[rank - 2] == 1 && bv.strides[rank - 1] != 1) {
    g.b_column_address = [=, this](const Index& b, Value* k, Value* j) {
      Value* off = i64(bv.offset);
      for (size_t d = 0; d < b.size(); ++d) off = builder_.CreateAdd(off, builder_.CreateMul(b[d], i64(bv.strides[d])));
      off = builder_.CreateAdd(off, builder_.CreateAdd(k, builder_.CreateMul(j, i64(bv.strides[rank - 1]))));
      return builder_.CreateInBoundsGEP(reg_type(context_, t), pointer(bv.base), off);
    };
  }
  Shape batch = g.batch;
  int64_t M = g.M, N = g.N;
  g.c_offset = [=, this](const Index& b, Value* i, Value* j) {
    Value* base = builder_.CreateMul(b.empty() ? i64(0) : flat(b, batch), i64(M * N));
    return builder_.CreateAdd(base, builder_.CreateAdd(builder_.CreateMul(i, i64(N)), j));
  };
  g.c_index = [](const Index& b, Value* i, Value* j) {
    Index idx = b;
    idx.push_back(i);
    idx.push_back(j);
    return idx;
  };
  return g;
}

KernelEmitter::Gemm KernelEmitter::conv_gemm() {
  const ir::Node& n = region_.nodes[kernel_.root];
  const ir::Attrs& at_ = n.attrs;
  ir::ValueId op0 = n.operands[0], op1 = n.operands[1];
  const Shape& out = region_.type(n.results[0]).shape;
  DType t = region_.type(n.results[0]).dtype;
  // The input coordinate that output coordinate o reads through kernel offset k (clamped into
  // range) and whether it is inside the input; and the output coordinate that reads input
  // coordinate x through k, if any.
  auto fwd = [=, this](Value* o, int d, Value* k, int64_t dim) {
    Value* pos = builder_.CreateAdd(builder_.CreateSub(builder_.CreateMul(o, i64(at_.strides[static_cast<size_t>(d)])),
                                                       i64(at_.padding[static_cast<size_t>(2 * d)])),
                                    builder_.CreateMul(k, i64(at_.dilation[static_cast<size_t>(d)])));
    // Unpadded, every tap of every output lies inside the input.
    if (at_.padding[static_cast<size_t>(2 * d)] == 0 && at_.padding[static_cast<size_t>(2 * d + 1)] == 0)
      return std::make_pair(pos, static_cast<Value*>(builder_.getTrue()));
    Value* valid = builder_.CreateAnd(builder_.CreateICmpSGE(pos, i64(0)), builder_.CreateICmpSLT(pos, i64(dim)));
    return std::make_pair(builder_.CreateSelect(valid, pos, i64(0)), valid);
  };
  auto back = [=, this](Value* x, int d, Value* k, int64_t out_dim) {
    int64_t s = at_.strides[static_cast<size_t>(d)];
    Value* t0 = builder_.CreateSub(builder_.CreateAdd(x, i64(at_.padding[static_cast<size_t>(2 * d)])),
                                   builder_.CreateMul(k, i64(at_.dilation[static_cast<size_t>(d)])));
    Value* q = s == 1 ? t0 : builder_.CreateSDiv(t0, i64(s));
    Value* valid = builder_.CreateAnd(builder_.CreateICmpSGE(t0, i64(0)), builder_.CreateICmpSLT(q, i64(out_dim)));
    if (s != 1) valid = builder_.CreateAnd(valid, builder_.CreateICmpEQ(builder_.CreateSRem(t0, i64(s)), i64(0)));
    return std::make_pair(builder_.CreateSelect(valid, q, i64(0)), valid);
  };
  auto guarded = [=, this](Value* valid, Value* x) { return builder_.CreateSelect(valid, x, constant(t, 0)); };
  auto div = [this](Value* x, int64_t d) { return builder_.CreateUDiv(x, i64(d)); };
  auto rem = [this](Value* x, int64_t d) { return builder_.CreateURem(x, i64(d)); };
  // The weight w[o, c, taps...] at tap kk.
  auto weight = [=, this](Value* o, Value* c, int64_t C, int64_t taps, Value* kk) {
    return at_flat(op1, builder_.CreateAdd(
                            builder_.CreateMul(builder_.CreateAdd(builder_.CreateMul(o, i64(C)), c), i64(taps)), kk));
  };
  Gemm g;
  // conv2d and its input gradient are one product per image: rows are the result's channels,
  // k runs over (the other side's channel, kernel tap), columns over the result's pixels, and
  // `tap` maps a result coordinate and kernel offset to the operand coordinate it reads (fwd:
  // the input an output reads; back: the output that reads an input).
  auto per_image = [&](int64_t rows, int64_t blocks, bool rows_are_out_channels, const Shape& src, const auto& tap) {
    const Shape& ws = region_.type(op1).shape;
    int64_t C = ws[1], KH = ws[2], KW = ws[3], H = out[2], W = out[3];
    g.batch = {out[0]};
    g.M = rows, g.N = H * W, g.kc = KH * KW, g.blocks = blocks, g.K = blocks * KH * KW;
    g.a = [=](const Index&, Value* i, Value* kb, Value* kk) {
      return rows_are_out_channels ? weight(i, kb, C, KH * KW, kk) : weight(kb, i, C, KH * KW, kk);
    };
    g.b = [=, this](const Index& b, Value* kb, Value* kk, Value* j) {
      auto [y, yv] = tap(div(j, W), 0, div(kk, KW), src[2]);
      auto [x, xv] = tap(rem(j, W), 1, rem(kk, KW), src[3]);
      return guarded(builder_.CreateAnd(yv, xv), at(op0, {b[0], kb, y, x}));
    };
    g.c_offset = [=, this](const Index& b, Value* i, Value* j) {
      return builder_.CreateAdd(
          builder_.CreateMul(builder_.CreateAdd(builder_.CreateMul(b[0], i64(rows)), i), i64(H * W)), j);
    };
    g.c_index = [=](const Index& b, Value* i, Value* j) { return Index{b[0], i, div(j, W), rem(j, W)}; };
  };
  if (n.op == ir::Op::Conv2d) {  // y[n, o, oh, ow] = sum over c, kh, kw of w[o, c, kh, kw] x[n, c, ...]
    const Shape& ws = region_.type(op1).shape;
    per_image(ws[0], ws[1], true, region_.type(op0).shape, fwd);
  } else if (n.op == ir::Op::Conv2dInputGrad) {  // dx[n, c, h, w] = sum over o, kh, kw of w[o, c, kh, kw] g[n, o, ...]
    const Shape& ws = region_.type(op1).shape;
    per_image(ws[1], ws[0], false, region_.type(op0).shape, back);
  } else {  // Conv2dWeightGrad: dw[o, c, kh, kw] = sum over n, oh, ow of g[n, o, oh, ow] x[n, c, ...]
    const Shape &xs = region_.type(op0).shape, &gs = region_.type(op1).shape;
    int64_t C = out[1], KH = out[2], KW = out[3], OH = gs[2], OW = gs[3];
    g.M = out[0], g.N = C * KH * KW, g.kc = OH * OW, g.blocks = gs[0], g.K = gs[0] * OH * OW;
    int64_t O = out[0];
    g.a = [=, this](const Index&, Value* o, Value* bn, Value* p) {
      return at_flat(op1,
                     builder_.CreateAdd(
                         builder_.CreateMul(builder_.CreateAdd(builder_.CreateMul(bn, i64(O)), o), i64(OH * OW)), p));
    };
    g.b_image = [=, this](const Index&, Value* bn, Value* oh, Value* ow, Value* j) {
      Value* kk = rem(j, KH * KW);
      auto [h, hv] = fwd(oh, 0, div(kk, KW), xs[2]);
      auto [w, wv] = fwd(ow, 1, rem(kk, KW), xs[3]);
      return guarded(builder_.CreateAnd(hv, wv), at(op0, {bn, div(j, KH * KW), h, w}));
    };
    g.b = [=](const Index& b, Value* bn, Value* p, Value* j) { return g.b_image(b, bn, div(p, OW), rem(p, OW), j); };
    g.image_rows = OH, g.image_cols = OW;
    int64_t N = g.N;
    g.c_offset = [=, this](const Index&, Value* o, Value* j) {
      return builder_.CreateAdd(builder_.CreateMul(o, i64(N)), j);
    };
    g.c_index = [=, this](const Index&, Value* o, Value* j) {
      Value* kk = rem(j, KH * KW);
      return Index{o, div(j, KH * KW), div(kk, KW), rem(kk, KW)};
    };
  }
  return g;
}

}  // namespace fluxion::cpu
