// The MatMul kernel's schedule: a register-blocked, cache-blocked matrix product, used for
// matmul and for convolution and its two gradients (with groups = 1), which read their input
// as im2col (the operands' accessors are matmul.cpp's).
//
// The right operand is packed, one k-block x NR-column panel at a time, into a contiguous
// buffer on the stack (so its rows never conflict in the caches, whatever its layout, and a
// convolution's im2col is formed there and nowhere else); each MR x NR tile of the result
// (NR = two vector widths) is accumulated in vector registers over the k-block, and after the
// last k-block the kernel's epilogue (bias, activation, reductions...) runs on the tile (on
// the leftover rows' tiles together) while it is in L1. Threads split the outermost batch
// dimension, the rows or the panels (a wide product, or the parts of one split over its
// columns); each packs the panels it uses, except that a batch of products of one B planned
// `shared_pack` has every panel of every k-block packed once into its scratch bytes first
// (gemm_pack, the threads splitting the panels) and every entry's tiles read them there. A part
// of a weight gradient split over its images runs that range of k-blocks (a block is an image).
#include <algorithm>
#include <array>
#include <bit>
#include <iterator>

#include <llvm/IR/IntrinsicsX86.h>

#include "backends/cpu/codegen.h"
#include "fluxion/error.h"
#include "support/round_up.h"

namespace fluxion::cpu {

using llvm::Value;

// One emission of the product: what stays fixed while its loops are emitted (the operands, the
// vector shape, the panel buffer), and one method per level of the loop nest.
class KernelEmitter::GemmEmitter {
 public:
  GemmEmitter(KernelEmitter& e, const Gemm& g)
      : emitter_(e),
        builder_(e.builder_),
        product_(g),
        result_(e.region_.nodes[e.kernel_.root].results[0]),
        elem_type_(reg_type(e.context_, e.region_.type(result_).dtype)),
        elem_bytes_(dtype_size(e.region_.type(result_).dtype)),
        lanes_(static_cast<int>(e.kernel_.plan.vector_lanes)),
        panel_columns_(static_cast<int>(e.kernel_.plan.tile.n)),
        vector_type_(llvm::FixedVectorType::get(elem_type_, static_cast<unsigned>(lanes_))),
        align_(static_cast<uint64_t>(elem_bytes_)),
        result_data_(e.pointer(result_)),
        pairs_(e.kernel_.plan.strategy == kernel::Strategy::Bf16Tiles) {
    bool has_epilogue = e.kernel_.nodes.size() > 1;
    whole_epilogue_ = e.kernel_.plan.whole_epilogue;
    tile_epilogue_ = has_epilogue && !whole_epilogue_;
    epilogue_ = has_epilogue;
    panels_ = support::ceil_div<int64_t>(g.N, panel_columns_);
    if (e.kernel_.plan.shared_pack) {
      packed_ = e.scratch();
    } else {
      panel_ = e.stack_buffer(elem_type_, std::max<int64_t>(1, g.kc) * panel_columns_);
    }
  }

  // Units [lo, hi) of the shared packing, unit u being panel u % panels_ of k-block u / panels_.
  void pack_units(Value* lo, Value* hi) {
    for_each(lo, hi, [&](Value* u) {
      Value* kb = builder_.CreateUDiv(u, i64(panels_));
      Value* j0 = builder_.CreateMul(builder_.CreateURem(u, i64(panels_)), i64(panel_columns_));
      panel_ = shared_panel(u);
      pack(kb, block_length(kb), j0, panel_width(j0));
    });
  }

  void run(Value* lo, Value* hi) {
    const kernel::Kernel& k = emitter_.kernel_;
    if (k.split_by(kernel::SplitOver::Columns)) {
      // A part of a kernel split over columns (kernel_ir.h): [lo, hi) starts at a panel and ends
      // at one or at the last column (thread_grain).
      p0_ = builder_.CreateSDiv(lo, i64(panel_columns_));
      p1_ = builder_.CreateSDiv(builder_.CreateAdd(hi, i64(panel_columns_ - 1)), i64(panel_columns_));
      product(i64(0), i64(product_.M));
    } else if (k.split_by(kernel::SplitOver::Images)) {
      // A part of a weight gradient split over its images: a k-block is one image's pixels
      // (conv_gemm blocks k by kernel::ConvProduct::k_inner).
      if (product_.blocks != kernel::split_extent(emitter_.region_, k))
        detail::fail("cpu codegen", "internal error: a weight gradient split over images is not blocked by image");
      kb0_ = lo, kb1_ = hi;
      product(i64(0), i64(product_.M));
    } else if (k.split_by(kernel::SplitOver::Depth)) {
      // A part of a product split over its depth: [lo, hi) is whole k-blocks of k (thread_grain).
      if (kernel::kSplitDepthGrain % product_.kc != 0)
        detail::fail("cpu codegen", "a product split over its depth needs a k-block dividing " +
                                        std::to_string(kernel::kSplitDepthGrain) + ", not " +
                                        std::to_string(product_.kc));
      kb0_ = builder_.CreateUDiv(lo, i64(product_.kc));
      kb1_ = builder_.CreateUDiv(builder_.CreateAdd(hi, i64(product_.kc - 1)), i64(product_.kc));
      product(i64(0), i64(product_.M));
    } else if (k.plan.split_columns) {
      // The kernel's range of rows [lo, hi) stands for the same share of the panels (as in
      // matmul_transposed.cpp): consecutive row ranges give consecutive panel ranges.
      int64_t panels = support::ceil_div<int64_t>(product_.N, panel_columns_);
      p0_ = builder_.CreateSDiv(builder_.CreateMul(lo, i64(panels)), i64(product_.M));
      p1_ = builder_.CreateSDiv(builder_.CreateMul(hi, i64(panels)), i64(product_.M));
      product(i64(0), i64(product_.M));
    } else if (product_.batch.empty()) {
      product(lo, hi);
    } else {
      emitter_.nest(product_.batch, lo, hi, [&](const Index& b) {
        batch_ = b;
        product(emitter_.i64(0), emitter_.i64(product_.M));
      });
    }
  }

 private:
  Value* i64(int64_t v) { return emitter_.i64(v); }
  Value* element(Value* base, Value* offset) { return builder_.CreateInBoundsGEP(elem_type_, base, offset); }
  Value* c_element(Value* i, Value* j) { return element(result_data_, product_.c_offset(batch_, i, j)); }
  Value* zero() { return llvm::ConstantFP::get(elem_type_, 0.0); }
  void for_each(Value* from, Value* to, const std::function<void(Value*)>& f, LoopHint hint = LoopHint::None) {
    emit_for(
        builder_, from, to, {},
        [&](Value* i, const std::vector<Value*>&) {
          f(i);
          return std::vector<Value*>{};
        },
        hint);
  }
  // The length of k-block kb (the last may be short).
  Value* block_length(Value* kb) {
    return emitter_.intrinsic(
        llvm::Intrinsic::smin,
        {i64(product_.kc), builder_.CreateSub(i64(product_.K), builder_.CreateMul(kb, i64(product_.kc)))});
  }

  // This call's k-blocks: all of them, or [kb0_, kb1_) when it is a part of a split over images
  // or depth.
  Value* first_block() { return kb0_ ? kb0_ : i64(0); }
  Value* end_block() { return kb1_ ? kb1_ : i64(product_.blocks); }

  // The columns of this call's panels: all of them, or [p0_, p1_) panels' when it splits them.
  Value* first_column() { return p0_ ? builder_.CreateMul(p0_, i64(panel_columns_)) : i64(0); }
  Value* end_column() {
    return p1_ ? emitter_.intrinsic(llvm::Intrinsic::smin,
                                    {builder_.CreateMul(p1_, i64(panel_columns_)), i64(product_.N)})
               : i64(product_.N);
  }

  // Where unit u (a k-block's panel; pack_units) of the shared packing starts.
  Value* shared_panel(Value* u) { return element(packed_, builder_.CreateMul(u, i64(product_.kc * panel_columns_))); }

  // The columns of the panel starting at column j0: a constant where every panel is as wide (N
  // a multiple of NR, or a single panel).
  Value* panel_width(Value* j0) {
    int64_t N = product_.N;
    int NR = panel_columns_;
    return N % NR == 0 || N < NR ? i64(std::min<int64_t>(N, NR))
                                 : emitter_.intrinsic(llvm::Intrinsic::smin, {i64(NR), builder_.CreateSub(i64(N), j0)});
  }

  // Rows [r0, r1) of the product of batch_.
  void product(Value* r0, Value* r1) {
    if (cpu::dot_products(product_.M, product_.N, emitter_.kernel_.plan)) return dot_products(r0, r1);
    tile_rows_ = static_cast<int>(emitter_.kernel_.plan.tile.m);
    r0_ = r0, r1_ = r1;
    full_tiles_ = builder_.CreateSDiv(builder_.CreateSub(r1, r0), i64(tile_rows_));
    full_rows_end_ = builder_.CreateAdd(r0, builder_.CreateMul(full_tiles_, i64(tile_rows_)));
    if (product_.blocks == 1) {
      k_block(i64(0), true, builder_.getTrue());
      if (whole_epilogue_) epilogue(r0, r1, first_column(), end_column());
      return;
    }
    // Several k-blocks: C starts at zero, every block accumulates into it, the last one also
    // runs the epilogue.
    for_each(r0, r1, [&](Value* i) {
      for_each(first_column(), end_column(), [&](Value* j) { builder_.CreateStore(zero(), c_element(i, j)); });
    });
    if (product_.blocks == 0) {  // an empty sum (a convolution over no channels or no images): zeros
      if (epilogue_) epilogue(r0, r1, first_column(), end_column());
      return;
    }
    // One emitted k-block for all of them, the last told apart at run time: a second copy for
    // the last (with the tiles' epilogues) doubled the code LLVM compiles.
    Value* last = builder_.CreateSub(end_block(), i64(1));
    for_each(first_block(), end_block(), [&](Value* kb) { k_block(kb, false, builder_.CreateICmpEQ(kb, last)); });
    if (whole_epilogue_) epilogue(r0, r1, first_column(), end_column());
  }

  // A product of one register tile of rows narrower than a vector (a dot product): one scalar
  // multiply-add chain per result element, no packing. With more rows the register tiles are
  // faster, their zero-padded panel packed once for every row tile (W4's 128 x 84 x 10: 79 us
  // as chains, 7 us as tiles); with one tile, packing a panel two vectors wide for one or a few
  // columns would cost more than the chains save. A part of a split product sums only its own
  // k-blocks and columns, as the tiles do.
  void dot_products(Value* r0, Value* r1) {
    for_each(r0, r1, [&](Value* i) {
      for_each(first_column(), end_column(), [&](Value* j) {
        auto over_k = [&](Value* kb, const std::vector<Value*>& outer) {
          return emit_for(builder_, i64(0), block_length(kb), outer, [&](Value* kk, const std::vector<Value*>& acc) {
            Value* x = product_.a(batch_, i, kb, kk);
            Value* y = product_.b(batch_, kb, kk, j);
            return std::vector<Value*>{
                builder_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {elem_type_}, {x, y, acc[0]})};
          });
        };
        Value* sum = emit_for(builder_, first_block(), end_block(), {zero()}, over_k)[0];
        builder_.CreateStore(sum, c_element(i, j));
      });
    });
    if (epilogue_) epilogue(r0, r1, first_column(), end_column());
  }

  // The epilogue at rows [i0, i1) x columns [j0, j1). Both loops stay loops (unrolled, a
  // tile's six rows made six copies of the vectorised column loop in every tile's code, for no
  // measured speed), and a reduction along the row (a bias gradient) is accumulated in a value
  // it carries, stored after it, so that the loop vectorises without depending on LICM to move
  // the accumulator out of memory (which it did not do while a math call in the loop lacked
  // `willreturn`: W5's gradient then spent 10.3 ms in its product's kernel instead of 5.2).
  void epilogue(Value* i0, Value* i1, Value* j0, Value* j1) {
    const ir::Region& r = emitter_.region_;
    int64_t last_axis = static_cast<int64_t>(emitter_.kernel_.space.size()) - 1;
    // Only for a matmul, whose index is (batch..., i, j); a convolution's output pixels map j
    // to several of its axes.
    std::vector<size_t> along_rows;
    if (r.nodes[emitter_.kernel_.root].op == ir::Op::MatMul) {
      std::copy_if(
          emitter_.kernel_.nodes.begin(), emitter_.kernel_.nodes.end(), std::back_inserter(along_rows), [&](size_t n) {
            const ir::Node& node = r.nodes[n];
            return ir::op_info(node.op).cls == ir::OpClass::Reduce &&
                   std::find(node.attrs.axes.begin(), node.attrs.axes.end(), last_axis) != node.attrs.axes.end();
          });
    }
    for_each(
        i0, i1,
        [&](Value* i) {
          Index row = product_.c_index(batch_, i, j0);
          std::vector<Value*> init;
          for (size_t n : along_rows)
            init.push_back(emitter_.load(r.nodes[n].results[0], KernelEmitter::reduced_index(r.nodes[n], row)));
          std::vector<Value*> sums = emit_for(
              builder_, j0, j1, init,
              [&](Value* j, const std::vector<Value*>& carried) {
                std::map<size_t, Value*> acc;
                for (size_t a = 0; a < along_rows.size(); ++a) acc[along_rows[a]] = carried[a];
                emitter_.body_at(product_.c_index(batch_, i, j), {}, &acc);
                std::vector<Value*> next;
                for (size_t n : along_rows) next.push_back(acc.at(n));
                return next;
              },
              LoopHint::Rolled);
          for (size_t a = 0; a < along_rows.size(); ++a) {
            const ir::Node& node = r.nodes[along_rows[a]];
            emitter_.store(node.results[0], KernelEmitter::reduced_index(node, row), sums[a]);
          }
        },
        LoopHint::Rolled);
  }

  // One k-block: every panel of B packed, every tile accumulated. `first`: the tiles start
  // from zero (else from C); `last` (an i1 value): the epilogue follows. One emitted panel
  // serves them all: when N is not a multiple of NR the last panel's width is a run-time
  // value and its tiles' loads and stores of C are masked, instead of a second copy of every
  // tile for it.
  void k_block(Value* kb, bool first, Value* last) {
    Value* length = block_length(kb);
    Value* from = p0_ ? p0_ : i64(0);
    Value* to = p1_ ? p1_ : i64(panels_);
    for_each(from, to, [&](Value* jp) {
      Value* j0 = builder_.CreateMul(jp, i64(panel_columns_));
      Value* columns = panel_width(j0);
      if (packed_) {
        panel_ = shared_panel(builder_.CreateAdd(builder_.CreateMul(kb, i64(panels_)), jp));
      } else {
        pack(kb, length, j0, columns);
      }
      panel(kb, length, j0, columns, first, last);
    });
  }

  // Columns [j0, j0 + columns) of k-block kb, B's panel packed: every row tile.
  void panel(Value* kb, Value* length, Value* j0, Value* columns, bool first, Value* last) {
    emit_for(builder_, i64(0), full_tiles_, {}, [&](Value* ib, const std::vector<Value*>&) {
      tile(kb, length, builder_.CreateAdd(r0_, builder_.CreateMul(ib, i64(tile_rows_))), tile_rows_, j0, columns, first,
           last);
      return std::vector<Value*>{};
    });
    // The rows left over (fewer than a tile; how many depends on the thread's range) as tiles
    // of the largest power of two below the tile's rows (4 for tiles of 6 or 8), a tile's rows
    // past the last repeating the last: a row computes the same bits in any tile, so a repeat stores what the last row
    // stores. One row alone is a chain of dependent multiply-adds (which ran W5's product 8%
    // slower than OpenBLAS at AVX2); 4 rows' 8 independent chains take the same time, and they
    // are one copy of the tile's code where tiles of 4, 2 and 1 rows were three. Their epilogue
    // runs once after them all.
    if (tile_rows_ > 1) {
      auto rows = static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(tile_rows_ - 1)));
      Value* left = builder_.CreateSub(r1_, full_rows_end_);
      Value* tiles = builder_.CreateSDiv(builder_.CreateAdd(left, i64(rows - 1)), i64(rows));
      for_each(i64(0), tiles, [&](Value* ib) {
        tile(kb, length, builder_.CreateAdd(full_rows_end_, builder_.CreateMul(ib, i64(rows))), static_cast<int>(rows),
             j0, columns, first, builder_.getFalse(), r1_);
      });
    }
    epilogue_after(last, full_rows_end_, r1_, j0, columns);
  }

  // The tiles' epilogue at rows [i0, i1) x columns [j0, j0 + columns) when `last` (an i1
  // value) says their last k-block is done. A constant `last` emits the epilogue or nothing,
  // not a branch: dead copies would still cost LLVM their compile time until folded.
  void epilogue_after(Value* last, Value* i0, Value* i1, Value* j0, Value* columns) {
    if (!tile_epilogue_) return;
    Value* j1 = builder_.CreateAdd(j0, columns);
    if (auto* known = llvm::dyn_cast<llvm::ConstantInt>(last)) {
      if (known->isOne()) epilogue(i0, i1, j0, j1);
      return;
    }
    emit_if(builder_, last, [&] { epilogue(i0, i1, j0, j1); });
  }

  // Packs B's k-block kb, columns [j0, j0 + columns), into the panel. A panel is full (NR
  // columns) or the last, narrower one (N % NR): each has its own packing code, the full one's
  // a contiguous or transposed copy.
  void pack(Value* kb, Value* length, Value* j0, Value* columns) {
    if (auto* known = llvm::dyn_cast<llvm::ConstantInt>(columns))
      return pack(kb, length, j0, static_cast<int>(known->getSExtValue()));
    Value* full = builder_.CreateICmpEQ(columns, i64(panel_columns_));
    emit_if(builder_, full, [&] { pack(kb, length, j0, panel_columns_); });
    emit_if(builder_, builder_.CreateNot(full),
            [&] { pack(kb, length, j0, static_cast<int>(product_.N % panel_columns_)); });
  }

  // Packs a panel of `columns` columns: row by row when B's rows are contiguous; through
  // in-register transposes when its columns are; column by column over the block's grid for
  // im2col; else column by column, so that what depends only on the column is computed once
  // per column. Columns past `columns` are zeros.
  void pack(Value* kb, Value* length, Value* j0, int columns) {
    if (pairs_) return pack_pairs(kb, length, j0, columns);
    int NR = panel_columns_;
    auto one = [&](Value* kk, Value* jj) {
      store_packed(kk, jj, product_.b(batch_, kb, kk, column(j0, jj, columns)), columns);
    };
    if (product_.b_rows_contiguous) {
      for_each(i64(0), length, [&](Value* kk) { for_each(i64(0), i64(NR), [&](Value* jj) { one(kk, jj); }); });
    } else if (product_.b_columns_contiguous && columns == NR) {
      Value* full = pack_transposed(kb, length, j0);
      for_each(full, length, [&](Value* kk) { for_each(i64(0), i64(NR), [&](Value* jj) { one(kk, jj); }); });
    } else if (product_.b_grid) {
      // Column by column, each over the k-block's grid: no division of k.
      for_each(i64(0), i64(NR), [&](Value* jj) {
        Value* col = column(j0, jj, columns);
        for_each(i64(0), i64(product_.grid_rows), [&](Value* row) {
          for_each(i64(0), i64(product_.grid_cols), [&](Value* c) {
            Value* kk =
                builder_.CreateAdd(builder_.CreateMul(row, i64(product_.grid_cols), "", true, true), c, "", true, true);
            store_packed(kk, jj, product_.b_grid(batch_, kb, row, c, col), columns);
          });
        });
      });
    } else {
      for_each(i64(0), i64(NR), [&](Value* jj) { for_each(i64(0), length, [&](Value* kk) { one(kk, jj); }); });
    }
  }

  // Column jj of a panel starting at j0 as a column of B: clamped into B when the panel is
  // narrower than panel_columns_ (the value is then replaced by zero).
  Value* column(Value* j0, Value* jj, int columns) {
    Value* col = builder_.CreateAdd(j0, jj);
    if (columns == panel_columns_) return col;
    return builder_.CreateSelect(builder_.CreateICmpSLT(jj, i64(columns)), col, i64(product_.N - 1));
  }
  void store_packed(Value* kk, Value* jj, Value* x, int columns) {
    if (columns != panel_columns_) x = builder_.CreateSelect(builder_.CreateICmpSLT(jj, i64(columns)), x, zero());
    builder_.CreateStore(x, element(panel_, builder_.CreateAdd(builder_.CreateMul(kk, i64(panel_columns_)), jj)));
  }

  // Packs a panel of bf16 pairs (Strategy::Bf16Tiles): panel row p holds, for each of its NR
  // columns, the 32-bit pair of B[2p][j] (low half) and B[2p + 1][j] (high half), the second
  // zero past the block (read from row 2p again, so that no load leaves B). For a full panel:
  // row by row, two vector loads interleaved by a shuffle, where B's rows are contiguous; by
  // W x W blocks of pairs, W vector loads down the columns transposed in registers, where its
  // columns are (the pairs past the last whole block as below). Else pair by pair, along the
  // rows or down the columns as B is laid out.
  void pack_pairs(Value* kb, Value* length, Value* j0, int columns) {
    int NR = panel_columns_;
    llvm::Type* word_type = builder_.getInt32Ty();
    Value* k0 = builder_.CreateMul(kb, i64(product_.kc));
    Value* pairs = builder_.CreateLShr(builder_.CreateAdd(length, i64(1)), i64(1));
    // B's rows of pair p, and whether the second is in the block.
    auto rows_of = [&](Value* p) {
      Value* first = builder_.CreateShl(p, i64(1));
      Value* in = builder_.CreateICmpSLT(builder_.CreateAdd(first, i64(1)), length);
      Value* k = builder_.CreateAdd(k0, first);
      return std::tuple{k, builder_.CreateSelect(in, builder_.CreateAdd(k, i64(1)), k), in};
    };
    auto at = [&](Value* p, Value* jj) {
      return element(panel_, builder_.CreateAdd(builder_.CreateMul(p, i64(NR)), jj));
    };
    if (product_.b_rows_contiguous && columns == NR) {
      std::vector<int> interleave;
      for (int c = 0; c < NR; ++c) interleave.push_back(c), interleave.push_back(NR + c);
      for_each(i64(0), pairs, [&](Value* p) {
        auto [k, k1, in] = rows_of(p);
        Value* low = product_.b_view(batch_, k, j0, NR, Read::Bits);
        Value* high = builder_.CreateSelect(in, product_.b_view(batch_, k1, j0, NR, Read::Bits),
                                            llvm::Constant::getNullValue(low->getType()));
        builder_.CreateAlignedStore(builder_.CreateShuffleVector(low, high, interleave), at(p, i64(0)), align_);
      });
      return;
    }
    Value* from = i64(0);
    if (product_.b_columns_contiguous && columns == NR) {
      int W = lanes_;
      Value* blocks = builder_.CreateSDiv(builder_.CreateLShr(length, i64(1)), i64(W));
      for_each(i64(0), blocks, [&](Value* q) {
        Value* p0 = builder_.CreateMul(q, i64(W));
        Value* k = builder_.CreateAdd(k0, builder_.CreateShl(p0, i64(1)));
        for (int h = 0; h < 2; ++h) {
          std::vector<Value*> columns_of_pairs;
          for (int jj = 0; jj < W; ++jj)
            columns_of_pairs.push_back(
                product_.b_view(batch_, k, builder_.CreateAdd(j0, i64(h * W + jj)), W, Read::Pairs));
          std::vector<Value*> rows = emitter_.transpose_square(columns_of_pairs);
          for (int pp = 0; pp < W; ++pp)
            builder_.CreateAlignedStore(rows[static_cast<size_t>(pp)], at(builder_.CreateAdd(p0, i64(pp)), i64(h * W)),
                                        align_);
        }
      });
      from = builder_.CreateMul(blocks, i64(W));
    }
    auto one = [&](Value* p, Value* jj) {
      auto [k, k1, in] = rows_of(p);
      Value* j = column(j0, jj, columns);
      Value* low = builder_.CreateZExt(product_.b_view(batch_, k, j, 1, Read::Bits), word_type);
      Value* high = builder_.CreateZExt(product_.b_view(batch_, k1, j, 1, Read::Bits), word_type);
      high = builder_.CreateSelect(in, builder_.CreateShl(high, 16), builder_.getInt32(0));
      Value* word = builder_.CreateOr(low, high);
      if (columns != NR)
        word = builder_.CreateSelect(builder_.CreateICmpSLT(jj, i64(columns)), word, builder_.getInt32(0));
      builder_.CreateStore(word, at(p, jj));
    };
    if (product_.b_rows_contiguous) {
      for_each(from, pairs, [&](Value* p) { for_each(i64(0), i64(NR), [&](Value* jj) { one(p, jj); }); });
    } else {
      for_each(i64(0), i64(NR), [&](Value* jj) { for_each(from, pairs, [&](Value* p) { one(p, jj); }); });
    }
  }

  // The accumulation over k-block kb: per k, the panel row's two vectors times each row's
  // element of A, broadcast; one FMA per accumulator.
  std::vector<Value*> fma_products(Value* kb, Value* length, const std::vector<Value*>& row_index,
                                   std::vector<Value*> acc) {
    int W = lanes_;
    return emit_for(
        builder_, i64(0), length, acc,
        [&](Value* kk, const std::vector<Value*>& a) {
          Value* panel_row = element(panel_, builder_.CreateMul(kk, i64(panel_columns_)));
          Value* b0 = builder_.CreateAlignedLoad(vector_type_, panel_row, align_);
          Value* b1 = builder_.CreateAlignedLoad(vector_type_,
                                                 builder_.CreateConstInBoundsGEP1_64(elem_type_, panel_row, W), align_);
          std::vector<Value*> next;
          for (size_t r = 0; r < row_index.size(); ++r) {
            Value* x = builder_.CreateVectorSplat(static_cast<unsigned>(W), product_.a(batch_, row_index[r], kb, kk));
            next.push_back(builder_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vector_type_}, {x, b0, a[2 * r]}));
            next.push_back(builder_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vector_type_}, {x, b1, a[2 * r + 1]}));
          }
          return next;
        },
        LoopHint::Paired);
  }

  // A[i][k] and A[i][k + 1] (k + 1 must exist) as one 32-bit pair, the first in its low half:
  // one load where A's rows are contiguous, else two.
  Value* a_pair_bits(Value* i, Value* k) {
    if (product_.a_rows_contiguous) return product_.a_view(batch_, i, k, 1, Read::Pairs);
    llvm::Type* word = builder_.getInt32Ty();
    Value* low = builder_.CreateZExt(product_.a_view(batch_, i, k, 1, Read::Bits), word);
    Value* high = builder_.CreateZExt(product_.a_view(batch_, i, builder_.CreateAdd(k, i64(1)), 1, Read::Bits), word);
    return builder_.CreateOr(low, builder_.CreateShl(high, 16));
  }

  // The accumulation over k-block kb as bf16 pairs (Strategy::Bf16Tiles): per pair, the panel
  // row's two vectors of 16 column pairs times each row's pair of A's elements, broadcast; one
  // VDPBF16PS per accumulator. An odd block's last element is a pair with zero, the step after
  // the loop; after an even block that step adds zeros (its A element zeroed, and the panel row
  // it reads, which packing did not write).
  std::vector<Value*> pair_products(Value* kb, Value* length, const std::vector<Value*>& row_index,
                                    std::vector<Value*> acc) {
    auto* pair_type = llvm::FixedVectorType::get(builder_.getBFloatTy(), static_cast<unsigned>(2 * lanes_));
    Value* k0 = builder_.CreateMul(kb, i64(product_.kc));
    auto step = [&](Value* p, const std::function<Value*(Value*)>& a_pair, Value* odd, const std::vector<Value*>& a) {
      Value* row = element(panel_, builder_.CreateMul(p, i64(panel_columns_)));
      std::array<Value*, 2> b = {
          builder_.CreateAlignedLoad(pair_type, row, align_),
          builder_.CreateAlignedLoad(pair_type, builder_.CreateConstInBoundsGEP1_64(elem_type_, row, lanes_), align_)};
      if (odd) {
        for (Value*& h : b) h = builder_.CreateSelect(odd, h, llvm::Constant::getNullValue(pair_type));
      }
      std::vector<Value*> next;
      for (size_t r = 0; r < row_index.size(); ++r) {
        Value* x = builder_.CreateBitCast(
            builder_.CreateVectorSplat(static_cast<unsigned>(lanes_), a_pair(row_index[r])), pair_type);
        for (size_t h = 0; h < 2; ++h) {
          next.push_back(
              builder_.CreateIntrinsic(llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512, {}, {a[2 * r + h], x, b[h]}));
        }
      }
      return next;
    };
    Value* pairs = builder_.CreateLShr(length, i64(1));
    acc = emit_for(
        builder_, i64(0), pairs, acc,
        [&](Value* p, const std::vector<Value*>& a) {
          Value* k = builder_.CreateAdd(k0, builder_.CreateShl(p, i64(1)));
          auto pair = [&](Value* i) { return a_pair_bits(i, k); };
          return step(p, pair, nullptr, a);
        },
        LoopHint::Paired);
    Value* odd = builder_.CreateTrunc(length, builder_.getInt1Ty());
    Value* last = builder_.CreateAdd(k0, builder_.CreateSub(length, i64(1)));
    auto lone = [&](Value* i) {
      Value* x = builder_.CreateZExt(product_.a_view(batch_, i, last, 1, Read::Bits), builder_.getInt32Ty());
      return builder_.CreateSelect(odd, x, builder_.getInt32(0));
    };
    return step(pairs, lone, odd, acc);
  }

  // The whole W x W blocks of a full panel whose B columns are contiguous along k: W vector
  // loads along k, a transpose in registers, W vector stores. Returns where the rest of the
  // k-block (fewer than W rows) starts.
  Value* pack_transposed(Value* kb, Value* length, Value* j0) {
    int W = lanes_;
    Value* blocks = builder_.CreateSDiv(length, i64(W));
    emit_for(builder_, i64(0), blocks, {}, [&](Value* kq, const std::vector<Value*>&) {
      Value* k0 = builder_.CreateMul(kq, i64(W));
      Value* k = builder_.CreateAdd(builder_.CreateMul(kb, i64(product_.kc)), k0);
      for (int h = 0; h < 2; ++h) {
        std::vector<Value*> rows;
        for (int jj = 0; jj < W; ++jj) {
          rows.push_back(product_.b_view(batch_, k, builder_.CreateAdd(j0, i64(h * W + jj)), W, Read::Value));
        }
        rows = emitter_.transpose_square(rows);
        for (int kk = 0; kk < W; ++kk) {
          Value* row = builder_.CreateMul(builder_.CreateAdd(k0, i64(kk)), i64(panel_columns_));
          builder_.CreateAlignedStore(rows[static_cast<size_t>(kk)],
                                      element(panel_, builder_.CreateAdd(row, i64(h * W))), align_);
        }
      }
      return std::vector<Value*>{};
    });
    return builder_.CreateMul(blocks, i64(W));
  }

  // The register tile of `rows` rows from i0 by the panel's columns [j0, j0 + columns):
  // accumulated over the k-block from zero (`first`) or from C, stored to C, and followed by
  // the epilogue when `last` (an i1 value) says this is the last k-block. With `rows_end`, rows
  // from rows_end on repeat row rows_end - 1. A panel narrower than NR loads and stores C
  // through masks.
  void tile(Value* kb, Value* length, Value* i0, int rows, Value* j0, Value* columns, bool first, Value* last,
            Value* rows_end = nullptr) {
    int W = lanes_;
    auto* known = llvm::dyn_cast<llvm::ConstantInt>(columns);
    bool full = known && known->getSExtValue() == panel_columns_;
    std::vector<Value*> row_index;
    for (int r = 0; r < rows; ++r) {
      Value* i = builder_.CreateAdd(i0, i64(r));
      if (rows_end) i = emitter_.intrinsic(llvm::Intrinsic::smin, {i, builder_.CreateSub(rows_end, i64(1))});
      row_index.push_back(i);
    }
    // Lane l of half h holds column j0 + h * W + l, which exists when h * W + l < columns.
    std::vector<Value*> mask;
    if (!full) {
      std::vector<llvm::Constant*> lane;
      for (int l = 0; l < W; ++l)
        lane.push_back(llvm::ConstantInt::get(builder_.getInt64Ty(), static_cast<uint64_t>(l)));
      Value* lanes = llvm::ConstantVector::get(lane);
      for (int h = 0; h < 2; ++h) {
        Value* left = builder_.CreateVectorSplat(static_cast<unsigned>(W), builder_.CreateSub(columns, i64(h * W)));
        mask.push_back(builder_.CreateICmpSLT(lanes, left));
      }
    }
    std::vector<Value*> init;
    for (int r = 0; r < rows; ++r) {
      for (int h = 0; h < 2; ++h) {
        Value* at = c_element(row_index[static_cast<size_t>(r)], builder_.CreateAdd(j0, i64(h * W)));
        if (first) {
          init.push_back(llvm::ConstantAggregateZero::get(vector_type_));
        } else if (full) {
          init.push_back(builder_.CreateAlignedLoad(vector_type_, at, align_));
        } else {
          init.push_back(builder_.CreateMaskedLoad(vector_type_, at, align_, mask[static_cast<size_t>(h)],
                                                   llvm::ConstantAggregateZero::get(vector_type_)));
        }
      }
    }
    std::vector<Value*> acc =
        pairs_ ? pair_products(kb, length, row_index, init) : fma_products(kb, length, row_index, init);
    for (int r = 0; r < rows; ++r) {
      for (int h = 0; h < 2; ++h) {
        Value* at = c_element(row_index[static_cast<size_t>(r)], builder_.CreateAdd(j0, i64(h * W)));
        Value* v = acc[2 * static_cast<size_t>(r) + static_cast<size_t>(h)];
        if (full) {
          builder_.CreateAlignedStore(v, at, align_);
        } else {
          builder_.CreateMaskedStore(v, at, align_, mask[static_cast<size_t>(h)]);
        }
      }
    }
    epilogue_after(last, i0, builder_.CreateAdd(i0, i64(rows)), j0, columns);
  }

  KernelEmitter& emitter_;
  llvm::IRBuilder<>& builder_;
  const Gemm& product_;
  ir::ValueId result_;
  llvm::Type* elem_type_;
  int64_t elem_bytes_;
  int lanes_;          // W: a vector of result elements
  int panel_columns_;  // NR = 2W, the columns of a packed panel and of a register tile
  llvm::FixedVectorType* vector_type_;
  llvm::Align align_;
  Value* result_data_;  // the result's buffer
  bool pairs_;          // Strategy::Bf16Tiles: the panel's rows are pairs of B's rows, as bf16
  Value* panel_ = nullptr;   // the packed panel of B, k-block rows x NR
  Value* packed_ = nullptr;  // shared_pack: every panel of every k-block, packed (scratch)
  int64_t panels_ = 0;       // panels of NR columns in N
  bool epilogue_ = false, whole_epilogue_ = false, tile_epilogue_ = false;
  // The batch and rows being emitted, and their row tiles.
  Index batch_;
  Value *r0_ = nullptr, *r1_ = nullptr, *full_tiles_ = nullptr, *full_rows_end_ = nullptr;
  Value *p0_ = nullptr, *p1_ = nullptr;  // this call's panels, when threads split them
  Value *kb0_ = nullptr, *kb1_ = nullptr;  // this call's k-blocks, when parts split them
  int tile_rows_ = 1;
};

void KernelEmitter::gemm(const Gemm& g, Value* lo, Value* hi) { GemmEmitter(*this, g).run(lo, hi); }

void KernelEmitter::gemm_pack(const Gemm& g, Value* lo, Value* hi) { GemmEmitter(*this, g).pack_units(lo, hi); }

}  // namespace fluxion::cpu
