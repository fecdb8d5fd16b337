// Products C = A B^T-shaped as W3's weight gradient dW1 = dh x^T: few rows (W < M <= 2W, W
// the vector width), a right operand whose columns are contiguous along k (B = X^T), and one
// k-block. The MatMul kernel packs B's panels through in-register transposes, and with so few
// rows each packed panel serves only M / 8 register tiles, so the packing costs a sixth of the
// multiply-adds. Here the product is computed as C^T = B^T A^T instead: A^T is packed once (all
// of it is one panel of M columns), each register tile is 12 columns of C (at most a vector's lanes) by two vectors of
// rows, with B's elements broadcast straight from its rows, and the tile is transposed in
// registers into C's rows when stored. Threads split C's columns.
#include <algorithm>

#include "backends/cpu/codegen.h"
#include "fluxion/error.h"

namespace fluxion::cpu {

using llvm::Value;

void KernelEmitter::gemm_transposed(const Gemm& g, Value* lo, Value* hi) {
  ir::ValueId cv = region_.nodes[kernel_.root].results[0];
  DType ct = region_.type(cv).dtype;
  int64_t esize = dtype_size(ct);
  int W = static_cast<int>(kernel_.plan.vector_lanes);
  int64_t M = g.M, N = g.N, K = g.K;
  const int tile_columns = static_cast<int>(kernel_.plan.tile.m);
  if (!g.a_rows_contiguous || !g.b_columns_contiguous)
    detail::fail("cpu codegen", "internal error: transposed tiles planned for operands without contiguous rows");
  auto [et, vt, ealign, valign] = vector_types(context_, ct, W);
  Value* cp = pointer(cv);
  bool has_epilogue = kernel_.nodes.size() > 1;
  const Index none;
  auto elem = [&](Value* base, Value* off) { return builder_.CreateInBoundsGEP(et, base, off); };
  // A^T, K rows of 2W: row k holds A[0..M)[k], zeros past M. Packed by W x W blocks: W rows of A
  // loaded along k, transposed in registers.
  Value* at = stack_buffer(et, K * 2 * W);
  builder_.CreateMemSet(at, builder_.getInt8(0), i64(K * 2 * W * esize), llvm::Align(64));
  emit_for(builder_, i64(0), i64(K / W), {}, [&](Value* kq, const std::vector<Value*>&) {
    Value* k0 = builder_.CreateMul(kq, i64(W));
    for (int h = 0; h < 2; ++h) {
      std::vector<Value*> rows;
      for (int r = 0; r < W; ++r) {
        int64_t i = h * W + r;
        rows.push_back(i < M ? g.a_view(none, i64(i), k0, W, Read::Value)
                             : static_cast<Value*>(llvm::ConstantAggregateZero::get(vt)));
      }
      rows = transpose_square(rows);
      for (int kk = 0; kk < W; ++kk) {
        Value* dst =
            elem(at, builder_.CreateAdd(builder_.CreateMul(builder_.CreateAdd(k0, i64(kk)), i64(2 * W)), i64(h * W)));
        builder_.CreateAlignedStore(rows[static_cast<size_t>(kk)], dst, valign);
      }
    }
    return std::vector<Value*>{};
  });
  // Columns [j0, j0 + count) of C (count <= tile_columns), every row. Past count, the tile
  // repeats the last column and its lanes are not stored.
  auto tile = [&](Value* j0, Value* count) {
    Value* last = builder_.CreateAdd(j0, builder_.CreateSub(count, i64(1)));
    std::vector<Value*> zero(static_cast<size_t>(2 * tile_columns), llvm::ConstantAggregateZero::get(vt));
    std::vector<Value*> acc = emit_for(builder_, i64(0), i64(K), zero, [&](Value* k, const std::vector<Value*>& a) {
      Value* row = elem(at, builder_.CreateMul(k, i64(2 * W)));
      Value* a0 = builder_.CreateAlignedLoad(vt, row, valign);
      Value* a1 = builder_.CreateAlignedLoad(vt, builder_.CreateConstInBoundsGEP1_64(et, row, static_cast<uint64_t>(W)),
                                             valign);
      std::vector<Value*> next;
      for (int c = 0; c < tile_columns; ++c) {
        Value* j = c == 0 ? j0 : intrinsic(llvm::Intrinsic::smin, {builder_.CreateAdd(j0, i64(c)), last});
        Value* x = builder_.CreateVectorSplat(static_cast<unsigned>(W), g.b_view(none, k, j, 1, Read::Value));
        next.push_back(
            builder_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {x, a0, a[2 * static_cast<size_t>(c)]}));
        next.push_back(
            builder_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {x, a1, a[2 * static_cast<size_t>(c) + 1]}));
      }
      return next;
    });
    // acc[2c + h] holds C[hW .. hW + W)[j0 + c]: transposed, row r of block h is C[hW + r][j0..].
    std::vector<llvm::Constant*> lane_numbers;
    for (int l = 0; l < W; ++l) lane_numbers.push_back(builder_.getInt64(static_cast<uint64_t>(l)));
    Value* mask = builder_.CreateICmpSLT(llvm::ConstantVector::get(lane_numbers),
                                         builder_.CreateVectorSplat(static_cast<unsigned>(W), count));
    for (int h = 0; h < 2; ++h) {
      std::vector<Value*> cols;
      for (int c = 0; c < W; ++c) {
        cols.push_back(c < tile_columns ? acc[2 * static_cast<size_t>(c) + static_cast<size_t>(h)]
                                        : static_cast<Value*>(llvm::ConstantAggregateZero::get(vt)));
      }
      std::vector<Value*> rows = transpose_square(cols);
      for (int r = 0; r < W && h * W + r < M; ++r) {
        builder_.CreateMaskedStore(rows[static_cast<size_t>(r)], elem(cp, g.c_offset(none, i64(h * W + r), j0)), ealign,
                                   mask);
      }
    }
    if (has_epilogue) {
      emit_for(builder_, i64(0), i64(M), {}, [&](Value* i, const std::vector<Value*>&) {
        emit_for(builder_, j0, builder_.CreateAdd(j0, count), {}, [&](Value* j, const std::vector<Value*>&) {
          body_at(g.c_index(none, i, j));
          return std::vector<Value*>{};
        });
        return std::vector<Value*>{};
      });
    }
  };
  // The split is over rows (the kernel's first dimension): this thread's share of the columns.
  Value* j_lo = builder_.CreateSDiv(builder_.CreateMul(lo, i64(N)), i64(M));
  Value* j_hi = builder_.CreateSDiv(builder_.CreateMul(hi, i64(N)), i64(M));
  Value* full = builder_.CreateSDiv(builder_.CreateSub(j_hi, j_lo), i64(tile_columns));
  emit_for(builder_, i64(0), full, {}, [&](Value* t, const std::vector<Value*>&) {
    tile(builder_.CreateAdd(j_lo, builder_.CreateMul(t, i64(tile_columns))), i64(tile_columns));
    return std::vector<Value*>{};
  });
  // The columns left over: one narrower tile (a single column would be a chain of dependent
  // multiply-adds).
  Value* rest_start = builder_.CreateAdd(j_lo, builder_.CreateMul(full, i64(tile_columns)));
  Value* rest = builder_.CreateSub(j_hi, rest_start);
  emit_if(builder_, builder_.CreateICmpSGT(rest, i64(0)), [&] { tile(rest_start, rest); });
}

}  // namespace fluxion::cpu
