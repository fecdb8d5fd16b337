// The operands of the MatMul kernel (gemm.cpp) as accessors: a matmul's through the strided
// views it reads (matmul_gemm), a convolution's and its gradients' as im2col (conv_gemm).
#include "backends/cpu/codegen.h"
#include "backends/cpu/renderer.h"
#include "fluxion/error.h"
#include "kernel/conv_product.h"
#include "support/round_up.h"

namespace fluxion::cpu {

using llvm::Value;

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

void KernelEmitter::product(Value* lo, Value* hi) {
  init_reductions(lo, hi);
  switch (kernel_.plan.strategy) {
    case kernel::Strategy::TransposedTiles: gemm_transposed(matmul_gemm(), lo, hi); break;
    case kernel::Strategy::Tiles:
    case kernel::Strategy::Bf16Tiles: gemm(matmul_gemm(), lo, hi); break;
    case kernel::Strategy::Sliding: sliding_conv(lo, hi); break;
    default: gemm(conv_gemm(), lo, hi); break;
  }
}

KernelEmitter::Gemm KernelEmitter::matmul_gemm() {
  const ir::Node& n = region_.nodes[kernel_.root];
  const Shape& cs = region_.type(n.results[0]).shape;
  size_t rank = cs.size();
  kernel::StridedView av, bv;
  if (!kernel::matmul_operands(kernel_, &av, &bv))
    detail::fail("matmul", "internal error: operands are not strided views");
  Gemm g;
  g.batch.assign(cs.begin(), cs.end() - 2);
  g.M = cs[rank - 2];
  g.N = cs[rank - 1];
  g.K = region_.type(n.operands[0]).shape.back();
  g.kc = kernel_.plan.tile.k;
  g.blocks = std::max<int64_t>(1, support::ceil_div(g.K, g.kc));
  g.b_rows_contiguous = bv.strides[rank - 1] == 1;
  g.a_rows_contiguous = av.strides[rank - 1] == 1;
  g.b_columns_contiguous = bv.strides[rank - 2] == 1 && bv.strides[rank - 1] != 1;
  // An operand's base is of the product's dtype, or f16 or bf16 widened to f32 as it is loaded
  // (the fuser folds a widening conversion into the operand's view).
  auto offset = [this, rank](const kernel::StridedView& v, const Index& b, Value* i, Value* j) {
    Value* off = i64(v.offset);
    for (size_t d = 0; d < b.size(); ++d) off = builder_.CreateAdd(off, builder_.CreateMul(b[d], i64(v.strides[d])));
    off = builder_.CreateAdd(off, builder_.CreateMul(i, i64(v.strides[rank - 2])));
    return builder_.CreateAdd(off, builder_.CreateMul(j, i64(v.strides[rank - 1])));
  };
  // `lanes` elements from v[b][i][j] on, consecutive in memory.
  auto read = [this, offset](const kernel::StridedView& v, const Index& b, Value* i, Value* j, int lanes, Read how) {
    DType t = region_.type(v.base).dtype;
    llvm::Type* stored = mem_type(context_, t);
    Value* at = builder_.CreateInBoundsGEP(stored, pointer(v.base), offset(v, b, i, j));
    llvm::Type* element = how == Read::Pairs ? builder_.getInt32Ty() : stored;
    llvm::Type* type = lanes > 1 ? llvm::FixedVectorType::get(element, static_cast<unsigned>(lanes)) : element;
    Value* x = builder_.CreateAlignedLoad(type, at, llvm::Align(dtype_size(t)));
    return how == Read::Value ? from_memory(builder_, t, x) : x;
  };
  g.a_view = [=](const Index& b, Value* i, Value* k, int lanes, Read how) { return read(av, b, i, k, lanes, how); };
  g.b_view = [=](const Index& b, Value* k, Value* j, int lanes, Read how) { return read(bv, b, k, j, lanes, how); };
  int64_t kc = g.kc;
  g.a = [=, this](const Index& b, Value* i, Value* kb, Value* kk) {
    return read(av, b, i, builder_.CreateAdd(builder_.CreateMul(kb, i64(kc)), kk), 1, Read::Value);
  };
  g.b = [=, this](const Index& b, Value* kb, Value* kk, Value* j) {
    return read(bv, b, builder_.CreateAdd(builder_.CreateMul(kb, i64(kc)), kk), j, 1, Read::Value);
  };
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

// The product's operands from the shared im2col lowering; a k-block is one k_outer (a channel's
// taps, or an image's output pixels), packed by its rows and columns.
KernelEmitter::Gemm KernelEmitter::conv_gemm() {
  const ir::Node& n = region_.nodes[kernel_.root];
  kernel::ConvProduct p = kernel::conv_product(region_, n);
  Renderer render(*this);
  Gemm g;
  if (p.batch > 0) g.batch = {p.batch};
  g.M = p.M, g.N = p.N, g.kc = p.k_inner(), g.blocks = p.k_outer, g.K = p.K();
  int64_t cols = p.k_cols;
  auto image = [this](const Index& b) { return b.empty() ? i64(0) : b[0]; };
  // A is read inside the micro-kernel's loop over k, so along k_inner without dividing it: its
  // operand is stored whole, with the k grid contiguous.
  int64_t second_dim = region_.type(n.operands[1]).shape[1], k_inner = p.k_inner();
  g.a = [=, this, &n](const Index&, Value* i, Value* kb, Value* kk) {
    auto [first, second] = kernel::conv_product_a_leading(n, i, kb);
    Value* grid = builder_.CreateAdd(builder_.CreateMul(first, i64(second_dim)), second);
    return at_flat(n.operands[1], builder_.CreateAdd(builder_.CreateMul(grid, i64(k_inner)), kk));
  };
  g.b_grid = [=, this, &n](const Index& b, Value* kb, Value* row, Value* col, Value* j) mutable {
    return kernel::conv_product_b(render, region_, n, image(b), kb, row, col, j);
  };
  g.b = [=, this, b_grid = g.b_grid](const Index& b, Value* kb, Value* kk, Value* j) {
    return b_grid(b, kb, builder_.CreateUDiv(kk, i64(cols)), builder_.CreateURem(kk, i64(cols)), j);
  };
  g.grid_rows = p.k_rows, g.grid_cols = p.k_cols;
  int64_t M = p.M, N = p.N;
  g.c_offset = [=, this](const Index& b, Value* i, Value* j) {
    return builder_.CreateAdd(builder_.CreateMul(builder_.CreateAdd(builder_.CreateMul(image(b), i64(M)), i), i64(N)),
                              j);
  };
  g.c_index = [=, this, &n](const Index& b, Value* i, Value* j) mutable {
    return kernel::conv_product_c_index(render, region_, n, image(b), i, j);
  };
  return g;
}

}  // namespace fluxion::cpu
