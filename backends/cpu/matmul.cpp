// The MatMul kernel: a register-blocked, cache-blocked matrix product, used for matmul and for
// convolution and its two gradients (with groups = 1), which read their input as im2col.
//
// The right operand is packed, one k-block x NR-column panel at a time, into a contiguous
// buffer on the stack (so its rows never conflict in the caches, whatever its layout, and a
// convolution's im2col is formed there and nowhere else); each MR x NR tile of the result
// (NR = two vector widths) is accumulated in vector registers over the k-block, and after the
// last k-block the kernel's epilogue (bias, activation, reductions...) runs on the tile while
// it is in L1. Threads split the outermost batch dimension, or the rows; each packs the panels
// it uses.
#include "backends/cpu/codegen.h"
#include "fluxion/error.h"

namespace fluxion::cpu {

using llvm::Value;

namespace {
// MR, the rows of a register tile: 6 x 2 vectors of accumulators fit AVX2's 16 registers with
// the two B vectors and a broadcast; AVX-512's 32 registers fit 8 rows, which tile the
// multiples of 8 that layer widths usually are (W3's 32 rows: four tiles, no single-row rest).
constexpr int kRows = 6;
constexpr int kRowsWide = 8;
constexpr int kRowsMax = 12;  // 24 accumulators, two B vectors and a broadcast: 27 of 32 registers
constexpr int64_t kBlockK = 256;  // k-block length of a matmul: a packed panel stays in L1
constexpr int64_t kWholeEpilogueBytes = 32 << 10;
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
      rows[static_cast<size_t>(i)] = b_.CreateShuffleVector(a, c, lo);
      rows[static_cast<size_t>(i + half)] = b_.CreateShuffleVector(a, c, hi);
    }
  }
  return rows;
}

KernelEmitter::Gemm KernelEmitter::matmul_gemm() {
  const ir::Node& n = r_.nodes[k_.root];
  const Shape& cs = r_.type(n.results[0]).shape;
  size_t rank = cs.size();
  kernel::StridedView av, bv;
  if (!kernel::matmul_operands(r_, s_, k_, &av, &bv)) detail::fail("matmul", "internal error: operands are not strided views");
  Gemm g;
  g.batch.assign(cs.begin(), cs.end() - 2);
  g.M = cs[rank - 2];
  g.N = cs[rank - 1];
  g.K = r_.type(n.operands[0]).shape.back();
  g.kc = std::min(kBlockK, std::max<int64_t>(1, g.K));
  g.blocks = std::max<int64_t>(1, (g.K + g.kc - 1) / g.kc);
  g.b_rows_contiguous = bv.strides[rank - 1] == 1;
  DType t = r_.type(n.results[0]).dtype;
  auto strided = [this, rank, t](const kernel::StridedView& v, const Index& b, Value* i, Value* j) {
    Value* off = i64(v.offset);
    for (size_t d = 0; d < b.size(); ++d) off = b_.CreateAdd(off, b_.CreateMul(b[d], i64(v.strides[d])));
    off = b_.CreateAdd(off, b_.CreateMul(i, i64(v.strides[rank - 2])));
    off = b_.CreateAdd(off, b_.CreateMul(j, i64(v.strides[rank - 1])));
    return b_.CreateLoad(reg_type(c_, t), b_.CreateInBoundsGEP(reg_type(c_, t), pointer(v.base), off));
  };
  int64_t kc = g.kc;
  g.a = [=, this](const Index& b, Value* i, Value* kb, Value* kk) {
    return strided(av, b, i, b_.CreateAdd(b_.CreateMul(kb, i64(kc)), kk));
  };
  g.b = [=, this](const Index& b, Value* kb, Value* kk, Value* j) {
    return strided(bv, b, b_.CreateAdd(b_.CreateMul(kb, i64(kc)), kk), j);
  };
  if (av.strides[rank - 1] == 1) {
    g.a_row_address = [=, this](const Index& b, Value* i, Value* k) {
      Value* off = i64(av.offset);
      for (size_t d = 0; d < b.size(); ++d) off = b_.CreateAdd(off, b_.CreateMul(b[d], i64(av.strides[d])));
      off = b_.CreateAdd(off, b_.CreateAdd(b_.CreateMul(i, i64(av.strides[rank - 2])), k));
      return b_.CreateInBoundsGEP(reg_type(c_, t), pointer(av.base), off);
    };
  }
  if (bv.strides[rank - 2] == 1 && bv.strides[rank - 1] != 1) {
    g.b_column_address = [=, this](const Index& b, Value* k, Value* j) {
      Value* off = i64(bv.offset);
      for (size_t d = 0; d < b.size(); ++d) off = b_.CreateAdd(off, b_.CreateMul(b[d], i64(bv.strides[d])));
      off = b_.CreateAdd(off, b_.CreateAdd(k, b_.CreateMul(j, i64(bv.strides[rank - 1]))));
      return b_.CreateInBoundsGEP(reg_type(c_, t), pointer(bv.base), off);
    };
  }
  Shape batch = g.batch;
  int64_t M = g.M, N = g.N;
  g.c_offset = [=, this](const Index& b, Value* i, Value* j) {
    Value* base = b_.CreateMul(b.empty() ? i64(0) : flat(b, batch), i64(M * N));
    return b_.CreateAdd(base, b_.CreateAdd(b_.CreateMul(i, i64(N)), j));
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
  const ir::Node& n = r_.nodes[k_.root];
  const ir::Attrs& at_ = n.attrs;
  ir::ValueId op0 = n.operands[0], op1 = n.operands[1];
  const Shape& out = r_.type(n.results[0]).shape;
  DType t = r_.type(n.results[0]).dtype;
  // The input coordinate that output coordinate o reads through kernel offset k (clamped into
  // range) and whether it is inside the input; and the output coordinate that reads input
  // coordinate x through k, if any.
  auto fwd = [=, this](Value* o, int d, Value* k, int64_t dim) {
    Value* pos = b_.CreateAdd(b_.CreateSub(b_.CreateMul(o, i64(at_.strides[static_cast<size_t>(d)])), i64(at_.padding[static_cast<size_t>(2 * d)])),
                              b_.CreateMul(k, i64(at_.dilation[static_cast<size_t>(d)])));
    // Unpadded, every tap of every output lies inside the input.
    if (at_.padding[static_cast<size_t>(2 * d)] == 0 && at_.padding[static_cast<size_t>(2 * d + 1)] == 0) return std::make_pair(pos, static_cast<Value*>(b_.getTrue()));
    Value* valid = b_.CreateAnd(b_.CreateICmpSGE(pos, i64(0)), b_.CreateICmpSLT(pos, i64(dim)));
    return std::make_pair(b_.CreateSelect(valid, pos, i64(0)), valid);
  };
  auto back = [=, this](Value* x, int d, Value* k, int64_t out_dim) {
    int64_t s = at_.strides[static_cast<size_t>(d)];
    Value* t0 = b_.CreateSub(b_.CreateAdd(x, i64(at_.padding[static_cast<size_t>(2 * d)])), b_.CreateMul(k, i64(at_.dilation[static_cast<size_t>(d)])));
    Value* q = s == 1 ? t0 : b_.CreateSDiv(t0, i64(s));
    Value* valid = b_.CreateAnd(b_.CreateICmpSGE(t0, i64(0)), b_.CreateICmpSLT(q, i64(out_dim)));
    if (s != 1) valid = b_.CreateAnd(valid, b_.CreateICmpEQ(b_.CreateSRem(t0, i64(s)), i64(0)));
    return std::make_pair(b_.CreateSelect(valid, q, i64(0)), valid);
  };
  auto guarded = [=, this](Value* valid, Value* x) { return b_.CreateSelect(valid, x, constant(t, 0)); };
  auto div = [this](Value* x, int64_t d) { return b_.CreateUDiv(x, i64(d)); };
  auto rem = [this](Value* x, int64_t d) { return b_.CreateURem(x, i64(d)); };
  // The weight w[o, c, taps...] at tap kk.
  auto weight = [=, this](Value* o, Value* c, int64_t C, int64_t taps, Value* kk) {
    return at_flat(op1, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(o, i64(C)), c), i64(taps)), kk));
  };
  Gemm g;
  // conv2d and its input gradient are one product per image: rows are the result's channels,
  // k runs over (the other side's channel, kernel tap), columns over the result's pixels, and
  // `tap` maps a result coordinate and kernel offset to the operand coordinate it reads (fwd:
  // the input an output reads; back: the output that reads an input).
  auto per_image = [&](int64_t rows, int64_t blocks, bool rows_are_out_channels, const Shape& src, const auto& tap) {
    const Shape& ws = r_.type(op1).shape;
    int64_t C = ws[1], KH = ws[2], KW = ws[3], H = out[2], W = out[3];
    g.batch = {out[0]};
    g.M = rows, g.N = H * W, g.kc = KH * KW, g.blocks = blocks, g.K = blocks * KH * KW;
    g.a = [=](const Index&, Value* i, Value* kb, Value* kk) {
      return rows_are_out_channels ? weight(i, kb, C, KH * KW, kk) : weight(kb, i, C, KH * KW, kk);
    };
    g.b = [=, this](const Index& b, Value* kb, Value* kk, Value* j) {
      auto [y, yv] = tap(div(j, W), 0, div(kk, KW), src[2]);
      auto [x, xv] = tap(rem(j, W), 1, rem(kk, KW), src[3]);
      return guarded(b_.CreateAnd(yv, xv), at(op0, {b[0], kb, y, x}));
    };
    g.c_offset = [=, this](const Index& b, Value* i, Value* j) {
      return b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(b[0], i64(rows)), i), i64(H * W)), j);
    };
    g.c_index = [=](const Index& b, Value* i, Value* j) { return Index{b[0], i, div(j, W), rem(j, W)}; };
  };
  if (n.op == ir::Op::Conv2d) {  // y[n, o, oh, ow] = sum over c, kh, kw of w[o, c, kh, kw] x[n, c, ...]
    const Shape& ws = r_.type(op1).shape;
    per_image(ws[0], ws[1], true, r_.type(op0).shape, fwd);
  } else if (n.op == ir::Op::Conv2dInputGrad) {  // dx[n, c, h, w] = sum over o, kh, kw of w[o, c, kh, kw] g[n, o, ...]
    const Shape& ws = r_.type(op1).shape;
    per_image(ws[1], ws[0], false, r_.type(op0).shape, back);
  } else {  // Conv2dWeightGrad: dw[o, c, kh, kw] = sum over n, oh, ow of g[n, o, oh, ow] x[n, c, ...]
    const Shape &xs = r_.type(op0).shape, &gs = r_.type(op1).shape;
    int64_t C = out[1], KH = out[2], KW = out[3], OH = gs[2], OW = gs[3];
    g.M = out[0], g.N = C * KH * KW, g.kc = OH * OW, g.blocks = gs[0], g.K = gs[0] * OH * OW;
    int64_t O = out[0];
    g.a = [=, this](const Index&, Value* o, Value* bn, Value* p) {
      return at_flat(op1, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(bn, i64(O)), o), i64(OH * OW)), p));
    };
    g.b_image = [=, this](const Index&, Value* bn, Value* oh, Value* ow, Value* j) {
      Value* kk = rem(j, KH * KW);
      auto [h, hv] = fwd(oh, 0, div(kk, KW), xs[2]);
      auto [w, wv] = fwd(ow, 1, rem(kk, KW), xs[3]);
      return guarded(b_.CreateAnd(hv, wv), at(op0, {bn, div(j, KH * KW), h, w}));
    };
    g.b = [=](const Index& b, Value* bn, Value* p, Value* j) { return g.b_image(b, bn, div(p, OW), rem(p, OW), j); };
    g.image_rows = OH, g.image_cols = OW;
    int64_t N = g.N;
    g.c_offset = [=, this](const Index&, Value* o, Value* j) { return b_.CreateAdd(b_.CreateMul(o, i64(N)), j); };
    g.c_index = [=, this](const Index&, Value* o, Value* j) {
      Value* kk = rem(j, KH * KW);
      return Index{o, div(j, KH * KW), div(kk, KW), rem(kk, KW)};
    };
  }
  return g;
}

void KernelEmitter::gemm(const Gemm& g, Value* lo, Value* hi) {
  ir::ValueId cv = r_.nodes[k_.root].results[0];
  DType ct = r_.type(cv).dtype;
  llvm::Type* et = reg_type(c_, ct);
  int64_t esize = dtype_size(ct);
  int W = std::max<int>(1, target_.matmul_vector_bytes / static_cast<int>(esize));
  int NR = 2 * W;
  auto* vt = llvm::FixedVectorType::get(et, static_cast<unsigned>(W));
  llvm::Align ealign(static_cast<uint64_t>(esize));
  Value* cp = pointer(cv);
  bool has_epilogue = k_.nodes.size() > 1;
  int64_t M = g.M, N = g.N, K = g.K, kc = g.kc;
  // A small result runs its epilogue once, after its last k-block, over all of it (still in
  // L1): its loops are then as long as the rows, and a reduction along a row (a bias gradient)
  // is reduced across lanes once per row instead of once per row and panel. A larger one runs
  // it on each tile while that is in L1.
  bool whole_epilogue = has_epilogue && M * N * esize <= kWholeEpilogueBytes;
  bool tile_epilogue = has_epilogue && !whole_epilogue;
  Value* panel = stack_buffer(et, std::max<int64_t>(1, kc) * NR);
  auto elem = [&](Value* base, Value* off) { return b_.CreateInBoundsGEP(et, base, off); };
  auto for_ = [&](Value* from, Value* to, const std::function<void(Value*)>& f) {
    emit_for(b_, from, to, {}, [&](Value* i, const std::vector<Value*>&) {
      f(i);
      return std::vector<Value*>{};
    });
  };
  // The length of k-block kb (the last may be short).
  auto block_len = [&](Value* kb) {
    return intrinsic(llvm::Intrinsic::smin, {i64(kc), b_.CreateSub(i64(K), b_.CreateMul(kb, i64(kc)))});
  };

  auto per_batch = [&](const Index& bidx, Value* r0, Value* r1) {
    // The column loop stays a loop: a reduction along the row (a bias gradient) then vectorises.
    auto run_epilogue = [&](Value* i0, Value* i1, Value* j0, Value* j1) {
      for_(i0, i1, [&](Value* i) {
        emit_for(b_, j0, j1, {}, [&](Value* j, const std::vector<Value*>&) {
          body_at(g.c_index(bidx, i, j));
          return std::vector<Value*>{};
        }, LoopHint::Rolled);
      });
    };
    if (N < W) {
      // Too narrow for a vector of columns (a dot product, a matrix-vector product): one
      // scalar multiply-add chain per result element, no packing.
      for_(r0, r1, [&](Value* i) {
        for_(i64(0), i64(N), [&](Value* j) {
          Value* acc = emit_for(b_, i64(0), i64(g.blocks), {llvm::ConstantFP::get(et, 0.0)}, [&](Value* kb, const std::vector<Value*>& a0) {
            return emit_for(b_, i64(0), block_len(kb), a0, [&](Value* kk, const std::vector<Value*>& a) {
              return std::vector<Value*>{b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {et}, {g.a(bidx, i, kb, kk), g.b(bidx, kb, kk, j), a[0]})};
            });
          })[0];
          b_.CreateStore(acc, elem(cp, g.c_offset(bidx, i, j)));
        });
      });
      if (has_epilogue) run_epilogue(r0, r1, i64(0), i64(N));
      return;
    }
    // Rows that fit one register tile are one tile: rows left over after full tiles run one at
    // a time, each a chain of dependent multiply-adds, where a product of 10 rows would spend
    // most of its time.
    int max_rows = W >= 16 ? kRowsMax : kRows;
    int mr = M <= max_rows ? static_cast<int>(std::max<int64_t>(1, M)) : W >= 16 && M % kRowsWide == 0 ? kRowsWide : kRows;
    Value* rows = b_.CreateSub(r1, r0);
    Value* full_rows_end = b_.CreateAdd(r0, b_.CreateMul(b_.CreateSDiv(rows, i64(mr)), i64(mr)));
    // One k-block: every panel of B packed, every tile accumulated. `first`: the tiles start
    // from zero (else from C); `last`: the epilogue follows.
    auto block = [&](Value* kb, bool first, bool last) {
      Value* len = block_len(kb);
      auto do_panel = [&](Value* j0, int nr) {
        // Row by row when B's rows are contiguous; else column by column, so that what depends
        // only on the column (an im2col output position) is computed once per column.
        auto pack = [&](Value* kk, Value* jj) {
          Value* col = b_.CreateAdd(j0, jj);
          Value* valid = nr == NR ? nullptr : b_.CreateICmpSLT(jj, i64(nr));
          if (valid) col = b_.CreateSelect(valid, col, i64(N - 1));
          Value* x = g.b(bidx, kb, kk, col);
          if (valid) x = b_.CreateSelect(valid, x, llvm::ConstantFP::get(et, 0.0));
          b_.CreateStore(x, elem(panel, b_.CreateAdd(b_.CreateMul(kk, i64(NR)), jj)));
        };
        if (g.b_rows_contiguous) {
          for_(i64(0), len, [&](Value* kk) { for_(i64(0), i64(NR), [&](Value* jj) { pack(kk, jj); }); });
        } else if (g.b_column_address && nr == NR) {
          // W x W blocks: W vector loads along k, a transpose in registers, W vector stores.
          Value* full = b_.CreateMul(b_.CreateSDiv(len, i64(W)), i64(W));
          emit_for(b_, i64(0), b_.CreateSDiv(len, i64(W)), {}, [&](Value* kq, const std::vector<Value*>&) {
            Value* k0 = b_.CreateMul(kq, i64(W));
            Value* kabs = b_.CreateAdd(b_.CreateMul(kb, i64(g.kc)), k0);
            for (int h = 0; h < 2; ++h) {
              std::vector<Value*> rows;
              for (int jj = 0; jj < W; ++jj) {
                rows.push_back(b_.CreateAlignedLoad(vt, g.b_column_address(bidx, kabs, b_.CreateAdd(j0, i64(h * W + jj))), ealign));
              }
              rows = transpose_square(rows);
              for (int kk = 0; kk < W; ++kk) {
                Value* dst = elem(panel, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(k0, i64(kk)), i64(NR)), i64(h * W)));
                b_.CreateAlignedStore(rows[static_cast<size_t>(kk)], dst, ealign);
              }
            }
            return std::vector<Value*>{};
          });
          for_(full, len, [&](Value* kk) { for_(i64(0), i64(NR), [&](Value* jj) { pack(kk, jj); }); });
        } else if (g.b_image) {
          // Column by column, each over the image's rows and columns: no division of k.
          for_(i64(0), i64(NR), [&](Value* jj) {
            Value* col = b_.CreateAdd(j0, jj);
            Value* valid = nr == NR ? nullptr : b_.CreateICmpSLT(jj, i64(nr));
            if (valid) col = b_.CreateSelect(valid, col, i64(N - 1));
            for_(i64(0), i64(g.image_rows), [&](Value* row) {
              for_(i64(0), i64(g.image_cols), [&](Value* c) {
                Value* kk = b_.CreateAdd(b_.CreateMul(row, i64(g.image_cols), "", true, true), c, "", true, true);
                Value* x = g.b_image(bidx, kb, row, c, col);
                if (valid) x = b_.CreateSelect(valid, x, llvm::ConstantFP::get(et, 0.0));
                b_.CreateStore(x, elem(panel, b_.CreateAdd(b_.CreateMul(kk, i64(NR)), jj)));
              });
            });
          });
        } else {
          for_(i64(0), i64(NR), [&](Value* jj) { for_(i64(0), len, [&](Value* kk) { pack(kk, jj); }); });
        }
        auto tile = [&](Value* i0, int tile_rows) {
          std::vector<Value*> init;
          for (int r = 0; r < tile_rows; ++r) {
            Value* i = b_.CreateAdd(i0, i64(r));
            for (int h = 0; h < 2; ++h) {
              Value* j = b_.CreateAdd(j0, i64(h * W));
              if (first) {
                init.push_back(llvm::ConstantAggregateZero::get(vt));
              } else if (nr == NR) {
                init.push_back(b_.CreateAlignedLoad(vt, elem(cp, g.c_offset(bidx, i, j)), ealign));
              } else {
                Value* v = llvm::ConstantAggregateZero::get(vt);
                for (int l = 0; l < W && h * W + l < nr; ++l) {
                  v = b_.CreateInsertElement(v, b_.CreateLoad(et, elem(cp, g.c_offset(bidx, i, b_.CreateAdd(j, i64(l))))), static_cast<uint64_t>(l));
                }
                init.push_back(v);
              }
            }
          }
          std::vector<Value*> acc = emit_for(b_, i64(0), len, init, [&](Value* kk, const std::vector<Value*>& a) {
            Value* prow = elem(panel, b_.CreateMul(kk, i64(NR)));
            Value* b0 = b_.CreateAlignedLoad(vt, prow, ealign);
            Value* b1 = b_.CreateAlignedLoad(vt, b_.CreateConstInBoundsGEP1_64(et, prow, static_cast<uint64_t>(W)), ealign);
            std::vector<Value*> next;
            for (int r = 0; r < tile_rows; ++r) {
              Value* xs = b_.CreateVectorSplat(static_cast<unsigned>(W), g.a(bidx, b_.CreateAdd(i0, i64(r)), kb, kk));
              next.push_back(b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {xs, b0, a[2 * static_cast<size_t>(r)]}));
              next.push_back(b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {xs, b1, a[2 * static_cast<size_t>(r) + 1]}));
            }
            return next;
          });
          for (int r = 0; r < tile_rows; ++r) {
            Value* i = b_.CreateAdd(i0, i64(r));
            for (int h = 0; h < 2; ++h) {
              Value* j = b_.CreateAdd(j0, i64(h * W));
              Value* v = acc[2 * static_cast<size_t>(r) + static_cast<size_t>(h)];
              if (nr == NR) {
                b_.CreateAlignedStore(v, elem(cp, g.c_offset(bidx, i, j)), ealign);
              } else {
                for (int l = 0; l < W && h * W + l < nr; ++l) {
                  b_.CreateStore(b_.CreateExtractElement(v, static_cast<uint64_t>(l)), elem(cp, g.c_offset(bidx, i, b_.CreateAdd(j, i64(l)))));
                }
              }
            }
          }
          if (last && tile_epilogue) run_epilogue(i0, b_.CreateAdd(i0, i64(tile_rows)), j0, b_.CreateAdd(j0, i64(nr)));
        };
        emit_for(b_, i64(0), b_.CreateSDiv(rows, i64(mr)), {}, [&](Value* ib, const std::vector<Value*>&) {
          tile(b_.CreateAdd(r0, b_.CreateMul(ib, i64(mr))), mr);
          return std::vector<Value*>{};
        });
        // The rows left over, one vector row at a time.
        for_(full_rows_end, r1, [&](Value* i) { tile(i, 1); });
      };
      if (N / NR > 0) for_(i64(0), i64(N / NR), [&](Value* jp) { do_panel(b_.CreateMul(jp, i64(NR)), NR); });
      if (N % NR) do_panel(i64(N / NR * NR), static_cast<int>(N % NR));
    };
    if (g.blocks == 1) {
      block(i64(0), true, true);
      if (whole_epilogue) run_epilogue(r0, r1, i64(0), i64(N));
      return;
    }
    // Several k-blocks: C starts at zero, every block accumulates into it, the last one also
    // runs the epilogue.
    for_(r0, r1, [&](Value* i) { for_(i64(0), i64(N), [&](Value* j) { b_.CreateStore(llvm::ConstantFP::get(et, 0.0), elem(cp, g.c_offset(bidx, i, j))); }); });
    if (g.blocks == 0) {  // an empty sum (a convolution over no channels or no images): zeros
      if (has_epilogue) run_epilogue(r0, r1, i64(0), i64(N));
      return;
    }
    for_(i64(0), i64(g.blocks - 1), [&](Value* kb) { block(kb, false, false); });
    block(i64(g.blocks - 1), false, true);
    if (whole_epilogue) run_epilogue(r0, r1, i64(0), i64(N));
  };

  if (g.batch.empty()) {
    per_batch({}, lo, hi);
  } else {
    nest(g.batch, lo, hi, [&](const Index& bidx) { per_batch(bidx, i64(0), i64(M)); });
  }
}

}  // namespace fluxion::cpu
