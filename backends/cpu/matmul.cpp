// The MatMul kernel: a register-blocked matrix multiply. Each MR x NR tile of the output is
// accumulated in vector registers over the whole k range (NR = two vector widths), stored, and
// then the kernel's epilogue (bias, activation, reductions...) runs on the tile while it is in
// L1. Operands are read through strided views, so transposes in backward passes cost nothing;
// a right-hand operand whose columns are not contiguous is first packed into scratch memory.
#include "backends/cpu/codegen.h"
#include "fluxion/error.h"


namespace fluxion::cpu {

using llvm::Value;

namespace {
constexpr int kRows = 6;  // MR: rows of a register tile
constexpr ir::ValueId kScratch = -2;  // the kernel's scratch memory in buffers()
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
  Value* ap = pointer(av.base);
  Value* bp = pointer(bv.base);
  Value* cp = pointer(cv);
  bool pack = bv.strides[rank - 1] != 1;
  Shape batch(cs.begin(), cs.end() - 2);
  bool has_epilogue = k_.nodes.size() > 1;

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
    Value* bflat = bidx.empty() ? i64(0) : flat(bidx, batch);
    // B element (k, j): packed row-major per batch, or read through its view.
    Value* bbase = bp;
    std::function<Value*(Value*, Value*)> b_off = [&](Value* kk, Value* j) { return offset(bv, bidx, kk, j); };
    if (pack) {
      Value* sp = pointer(kScratch);
      Value* poff = b_.CreateMul(bflat, i64(K * N));
      for_(i64(0), i64(K), [&](Value* kk) {
        for_(i64(0), i64(N), [&](Value* j) {
          Value* x = b_.CreateLoad(et, elem(bp, offset(bv, bidx, kk, j)));
          b_.CreateStore(x, elem(sp, b_.CreateAdd(poff, b_.CreateAdd(b_.CreateMul(kk, i64(N)), j))));
        });
      });
      bbase = sp;
      b_off = [&, poff](Value* kk, Value* j) { return b_.CreateAdd(poff, b_.CreateAdd(b_.CreateMul(kk, i64(N)), j)); };
    }
    Value* cbase = b_.CreateMul(bflat, i64(M * N));
    auto c_off = [&](Value* i, Value* j) { return b_.CreateAdd(cbase, b_.CreateAdd(b_.CreateMul(i, i64(N)), j)); };
    auto run_epilogue = [&](Value* i0, Value* i1, Value* j0, Value* j1) {
      if (!has_epilogue) return;
      for_(i0, i1, [&](Value* i) {
        for_(j0, j1, [&](Value* j) {
          Index idx = bidx;
          idx.push_back(i);
          idx.push_back(j);
          body_at(idx);
        });
      });
    };
    // One output element by a scalar dot product (tile edges).
    auto scalar_tile = [&](Value* i0, Value* i1, Value* j0, Value* j1) {
      for_(i0, i1, [&](Value* i) {
        for_(j0, j1, [&](Value* j) {
          Value* acc = emit_for(b_, i64(0), i64(K), {llvm::ConstantFP::get(et, 0.0)}, [&](Value* kk, const std::vector<Value*>& a) {
            Value* x = b_.CreateLoad(et, elem(ap, offset(av, bidx, i, kk)));
            Value* y = b_.CreateLoad(et, elem(bbase, b_off(kk, j)));
            return std::vector<Value*>{b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {et}, {x, y, a[0]})};
          })[0];
          b_.CreateStore(acc, elem(cp, c_off(i, j)));
        });
      });
      run_epilogue(i0, i1, j0, j1);
    };
    int64_t full_cols = N / NR * NR;
    Value* rows = b_.CreateSub(r1, r0);
    Value* full_rows_end = b_.CreateAdd(r0, b_.CreateMul(b_.CreateSDiv(rows, i64(kRows)), i64(kRows)));
    if (full_cols > 0) {
      emit_for(b_, i64(0), i64(full_cols / NR), {}, [&](Value* jb, const std::vector<Value*>&) {
        Value* j0 = b_.CreateMul(jb, i64(NR));
        Value* ntiles = b_.CreateSDiv(rows, i64(kRows));
        // A tile of `rows` rows from i0: accumulated over k in registers, stored, epilogue.
        auto vector_tile = [&](Value* i0, int rows) {
          std::vector<Value*> init(2 * static_cast<size_t>(rows), llvm::ConstantAggregateZero::get(vt));
          std::vector<Value*> acc = emit_for(b_, i64(0), i64(K), init, [&](Value* kk, const std::vector<Value*>& a) {
            Value* b0 = b_.CreateAlignedLoad(vt, elem(bbase, b_off(kk, j0)), llvm::Align(static_cast<uint64_t>(esize)));
            Value* b1 = b_.CreateAlignedLoad(vt, elem(bbase, b_off(kk, b_.CreateAdd(j0, i64(W)))), llvm::Align(static_cast<uint64_t>(esize)));
            std::vector<Value*> next;
            for (int r = 0; r < rows; ++r) {
              Value* x = b_.CreateLoad(et, elem(ap, offset(av, bidx, b_.CreateAdd(i0, i64(r)), kk)));
              Value* xs = b_.CreateVectorSplat(static_cast<unsigned>(W), x);
              next.push_back(b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {xs, b0, a[2 * static_cast<size_t>(r)]}));
              next.push_back(b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {xs, b1, a[2 * static_cast<size_t>(r) + 1]}));
            }
            return next;
          });
          for (int r = 0; r < rows; ++r) {
            Value* i = b_.CreateAdd(i0, i64(r));
            b_.CreateAlignedStore(acc[2 * static_cast<size_t>(r)], elem(cp, c_off(i, j0)), llvm::Align(static_cast<uint64_t>(esize)));
            b_.CreateAlignedStore(acc[2 * static_cast<size_t>(r) + 1], elem(cp, c_off(i, b_.CreateAdd(j0, i64(W)))), llvm::Align(static_cast<uint64_t>(esize)));
          }
          run_epilogue(i0, b_.CreateAdd(i0, i64(rows)), j0, b_.CreateAdd(j0, i64(NR)));
        };
        emit_for(b_, i64(0), ntiles, {}, [&](Value* ib, const std::vector<Value*>&) {
          vector_tile(b_.CreateAdd(r0, b_.CreateMul(ib, i64(kRows))), kRows);
          return std::vector<Value*>{};
        });
        // The rows left over, one vector row at a time.
        emit_for(b_, full_rows_end, r1, {}, [&](Value* i, const std::vector<Value*>&) {
          vector_tile(i, 1);
          return std::vector<Value*>{};
        });
        return std::vector<Value*>{};
      });
    }
    if (full_cols < N) scalar_tile(r0, r1, i64(full_cols), i64(N));
  };

  if (rank == 2) {
    per_batch({}, lo, hi);
  } else {
    nest(batch, lo, hi, [&](const Index& bidx) { per_batch(bidx, i64(0), i64(M)); });
  }
}

}  // namespace fluxion::cpu
