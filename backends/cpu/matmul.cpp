// The MatMul kernel: a register-blocked, cache-blocked matrix multiply. The right operand is
// packed, one k-block x NR-column panel at a time, into a contiguous buffer on the stack (so
// its rows never conflict in the caches, whatever its strides); each MR x NR tile of the output
// (NR = two vector widths) is accumulated in vector registers over the k-block, and after the
// last k-block the kernel's epilogue (bias, activation, reductions...) runs on the tile while
// it is in L1. The left operand is read through its strided view, so transposes in backward
// passes cost nothing. Threads split the rows; each packs the panels it uses.
#include "backends/cpu/codegen.h"
#include "fluxion/error.h"

namespace fluxion::cpu {

using llvm::Value;

namespace {
constexpr int kRows = 6;               // MR: rows of a register tile
constexpr int64_t kBlockK = 1024;       // k-block length, grown so there are at most kMaxBlocks
constexpr int64_t kMaxBlocks = 8;
}  // namespace

void KernelEmitter::matmul(Value* lo, Value* hi) {
  const ir::Node& n = r_.nodes[k_.root];
  ir::ValueId cv = n.results[0];
  const TensorType& ct = r_.type(cv);
  const Shape& cs = ct.shape;
  size_t rank = cs.size();
  int64_t M = cs[rank - 2], N = cs[rank - 1], K = r_.type(n.operands[0]).shape.back();
  kernel::StridedView av, bv;
  if (!kernel::matmul_operands(r_, s_, k_, &av, &bv)) {
    detail::fail("matmul", "internal error: operands are not strided views");
  }
  llvm::Type* et = reg_type(c_, ct.dtype);
  int64_t esize = dtype_size(ct.dtype);
  int W = std::max<int>(1, target_.vector_bytes / static_cast<int>(esize));
  int NR = 2 * W;
  auto* vt = llvm::FixedVectorType::get(et, static_cast<unsigned>(W));
  llvm::Align ealign(static_cast<uint64_t>(esize));
  Value* ap = pointer(av.base);
  Value* bp = pointer(bv.base);
  Value* cp = pointer(cv);
  Shape batch(cs.begin(), cs.end() - 2);
  bool has_epilogue = k_.nodes.size() > 1;
  int64_t KC = std::max(kBlockK, (K + kMaxBlocks - 1) / kMaxBlocks);
  int64_t nblocks = std::max<int64_t>(1, (K + KC - 1) / KC);
  Value* panel;
  {
    llvm::IRBuilder<> eb(&*b_.GetInsertBlock()->getParent()->getEntryBlock().getFirstInsertionPt());
    auto* a = eb.CreateAlloca(et, eb.getInt64(static_cast<uint64_t>(std::max<int64_t>(1, std::min(KC, K)) * NR)));
    a->setAlignment(llvm::Align(64));
    panel = a;
  }

  auto elem = [&](Value* base, Value* off) { return b_.CreateInBoundsGEP(et, base, off); };
  auto offset = [&](const kernel::StridedView& v, const Index& bidx, Value* i, Value* j) {
    Value* off = i64(v.offset);
    for (size_t d = 0; d < bidx.size(); ++d) off = b_.CreateAdd(off, b_.CreateMul(bidx[d], i64(v.strides[d])));
    off = b_.CreateAdd(off, b_.CreateMul(i, i64(v.strides[rank - 2])));
    return b_.CreateAdd(off, b_.CreateMul(j, i64(v.strides[rank - 1])));
  };
  auto for_ = [&](Value* from, Value* to, const std::function<void(Value*)>& f) {
    emit_for(b_, from, to, {}, [&](Value* i, const std::vector<Value*>&) {
      f(i);
      return std::vector<Value*>{};
    });
  };

  auto per_batch = [&](const Index& bidx, Value* r0, Value* r1) {
    Value* cbase = b_.CreateMul(bidx.empty() ? i64(0) : flat(bidx, batch), i64(M * N));
    auto c_off = [&](Value* i, Value* j) { return b_.CreateAdd(cbase, b_.CreateAdd(b_.CreateMul(i, i64(N)), j)); };
    auto run_epilogue = [&](Value* i0, Value* i1, Value* j0, Value* j1) {
      for_(i0, i1, [&](Value* i) {
        for_(j0, j1, [&](Value* j) {
          Index idx = bidx;
          idx.push_back(i);
          idx.push_back(j);
          body_at(idx);
        });
      });
    };
    if (N < W) {
      // Too narrow for a vector of columns (a dot product, a matrix-vector product): one
      // scalar multiply-add chain per output element, no packing.
      for_(r0, r1, [&](Value* i) {
        for_(i64(0), i64(N), [&](Value* j) {
          Value* acc = emit_for(b_, i64(0), i64(K), {llvm::ConstantFP::get(et, 0.0)}, [&](Value* kk, const std::vector<Value*>& a) {
            Value* x = b_.CreateLoad(et, elem(ap, offset(av, bidx, i, kk)));
            Value* y = b_.CreateLoad(et, elem(bp, offset(bv, bidx, kk, j)));
            return std::vector<Value*>{b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {et}, {x, y, a[0]})};
          })[0];
          b_.CreateStore(acc, elem(cp, c_off(i, j)));
        });
      });
      if (has_epilogue) run_epilogue(r0, r1, i64(0), i64(N));
      return;
    }
    Value* rows = b_.CreateSub(r1, r0);
    Value* full_rows_end = b_.CreateAdd(r0, b_.CreateMul(b_.CreateSDiv(rows, i64(kRows)), i64(kRows)));
    for (int64_t blk = 0; blk < nblocks; ++blk) {
      int64_t k0 = blk * KC, kc = std::min(KC, K - k0);
      bool first = blk == 0, last = blk == nblocks - 1;
      // One panel: B[k0:k0+kc, j0:j0+nr] packed as kc rows of NR (zero-padded) elements.
      auto do_panel = [&](Value* j0, int nr) {
        for_(i64(0), i64(kc), [&](Value* kk) {
          for_(i64(0), i64(NR), [&](Value* jj) {
            Value* col = b_.CreateAdd(j0, jj);
            Value* x;
            if (nr == NR) {
              x = b_.CreateLoad(et, elem(bp, offset(bv, bidx, b_.CreateAdd(kk, i64(k0)), col)));
            } else {
              Value* valid = b_.CreateICmpSLT(jj, i64(nr));
              Value* safe = b_.CreateSelect(valid, col, i64(N - 1));
              x = b_.CreateSelect(valid, b_.CreateLoad(et, elem(bp, offset(bv, bidx, b_.CreateAdd(kk, i64(k0)), safe))),
                                  llvm::ConstantFP::get(et, 0.0));
            }
            b_.CreateStore(x, elem(panel, b_.CreateAdd(b_.CreateMul(kk, i64(NR)), jj)));
          });
        });
        auto tile = [&](Value* i0, int tile_rows) {
          std::vector<Value*> init;
          for (int r = 0; r < tile_rows; ++r) {
            Value* i = b_.CreateAdd(i0, i64(r));
            for (int h = 0; h < 2; ++h) {
              Value* j = b_.CreateAdd(j0, i64(h * W));
              if (first) {
                init.push_back(llvm::ConstantAggregateZero::get(vt));
              } else if (nr == NR) {
                init.push_back(b_.CreateAlignedLoad(vt, elem(cp, c_off(i, j)), ealign));
              } else {
                Value* v = llvm::ConstantAggregateZero::get(vt);
                for (int l = 0; l < W && h * W + l < nr; ++l) {
                  v = b_.CreateInsertElement(v, b_.CreateLoad(et, elem(cp, c_off(i, b_.CreateAdd(j, i64(l))))), static_cast<uint64_t>(l));
                }
                init.push_back(v);
              }
            }
          }
          std::vector<Value*> acc = emit_for(b_, i64(0), i64(kc), init, [&](Value* kk, const std::vector<Value*>& a) {
            Value* prow = elem(panel, b_.CreateMul(kk, i64(NR)));
            Value* b0 = b_.CreateAlignedLoad(vt, prow, ealign);
            Value* b1 = b_.CreateAlignedLoad(vt, b_.CreateConstInBoundsGEP1_64(et, prow, static_cast<uint64_t>(W)), ealign);
            std::vector<Value*> next;
            for (int r = 0; r < tile_rows; ++r) {
              Value* x = b_.CreateLoad(et, elem(ap, offset(av, bidx, b_.CreateAdd(i0, i64(r)), b_.CreateAdd(kk, i64(k0)))));
              Value* xs = b_.CreateVectorSplat(static_cast<unsigned>(W), x);
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
                b_.CreateAlignedStore(v, elem(cp, c_off(i, j)), ealign);
              } else {
                for (int l = 0; l < W && h * W + l < nr; ++l) {
                  b_.CreateStore(b_.CreateExtractElement(v, static_cast<uint64_t>(l)), elem(cp, c_off(i, b_.CreateAdd(j, i64(l)))));
                }
              }
            }
          }
          if (last && has_epilogue) run_epilogue(i0, b_.CreateAdd(i0, i64(tile_rows)), j0, b_.CreateAdd(j0, i64(nr)));
        };
        emit_for(b_, i64(0), b_.CreateSDiv(rows, i64(kRows)), {}, [&](Value* ib, const std::vector<Value*>&) {
          tile(b_.CreateAdd(r0, b_.CreateMul(ib, i64(kRows))), kRows);
          return std::vector<Value*>{};
        });
        // The rows left over, one vector row at a time.
        for_(full_rows_end, r1, [&](Value* i) { tile(i, 1); });
      };
      if (N / NR > 0) for_(i64(0), i64(N / NR), [&](Value* jp) { do_panel(b_.CreateMul(jp, i64(NR)), NR); });
      if (N % NR) do_panel(i64(N / NR * NR), static_cast<int>(N % NR));
    }
  };

  if (rank == 2) {
    per_batch({}, lo, hi);
  } else {
    nest(batch, lo, hi, [&](const Index& bidx) { per_batch(bidx, i64(0), i64(M)); });
  }
}

}  // namespace fluxion::cpu
