// Kernel IR to LLVM IR (docs/cpu.md). A function per kernel, and one entry point that runs every
// step of the top-level region, loops included, so that a call of the program is a single call
// into native code. Small kernels are functions of the entry point's module; the others are
// modules of their own (kernel_modules.h), compiled in parallel and once per distinct code.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "backends/cpu/plan.h"
#include "ir/ir.h"
#include "kernel/frame.h"
#include "kernel/kernel_ir.h"
#include "runtime/cpu/helpers.h"

namespace fluxion::cpu {

// What the host needs to call the entry point: `int32_t fx_entry(void** io, char* arena)`, io
// holding the parameters' then the results' data pointers. A non-zero return is an error code.
struct ModuleInfo {
  std::string entry = "fx_entry";
  int64_t arena_bytes = 0;
};

class KernelModules;

// Emits the entry point's module `m` for program `p` with the top-level schedule `s`, and adds
// the modules of its larger kernels to `kernels`.
ModuleInfo emit_program(const ir::Program& p, const kernel::RegionSchedule& s, const Target& target, llvm::Module& m,
                        KernelModules& kernels);

using Index = std::vector<llvm::Value*>;

// Stands in KernelEmitter::buffers() for the kernel's scratch bytes (Kernel::scratch_offset in
// the arena), which are no value's.
inline constexpr ir::ValueId kScratchBuffer = -2;

// What LLVM is told about a loop emit_for makes. Rolled: not to unroll it at all (so that the
// loop vectoriser, not the weaker straight-line vectoriser, sees a reduction in it, or so that
// a loop whose unrolling gains nothing does not multiply the code LLVM compiles). Vectorize:
// to vectorise it where legal whatever its cost model says (short loops with interleaved
// accesses, which it otherwise leaves scalar). Paired: two iterations a trip, a register tile's
// k loop, whose every trip is a few loads and a dozen multiply-adds. Unrolled: fully, also in a
// kernel module, whose optimiser unrolls no loop itself (native.cpp); emit_for gives it to a loop
// of no hint whose inner loops are all unrolled, with at most kMaxUnrolledTrips iterations
// between constant bounds and at most kMaxUnrolledInstructions LLVM instructions unrolled (a
// pooling window's taps, a narrow panel's packing).
enum class LoopHint { None, Rolled, Vectorize, Unrolled, Paired };

inline constexpr int64_t kMaxUnrolledTrips = 16;
inline constexpr int64_t kMaxUnrolledInstructions = 512;

// Emits `for (i = lo; i < hi; ++i)` around body(i) with loop-carried values `carried`;
// returns the carried values after the loop.
std::vector<llvm::Value*> emit_for(
    llvm::IRBuilder<>& b, llvm::Value* lo, llvm::Value* hi, const std::vector<llvm::Value*>& carried,
    const std::function<std::vector<llvm::Value*>(llvm::Value*, const std::vector<llvm::Value*>&)>& body,
    LoopHint hint = LoopHint::None);

// Emits `if (cond) then()`.
void emit_if(llvm::IRBuilder<>& b, llvm::Value* cond, const std::function<void()>& then);

// LLVM type of a dtype held in a register (bool: i1; f16 and bf16: float, holding a value of
// their own) and in memory (bool: i8; f16 and bf16: i16, their bits).
llvm::Type* reg_type(llvm::LLVMContext& c, DType t);
// The dtype whose arithmetic computes dtype t's: f32 for f16 and bf16, t itself otherwise.
inline DType register_dtype(DType t) { return is_half(t) ? DType::f32 : t; }
llvm::Type* mem_type(llvm::LLVMContext& c, DType t);
// A loaded element (or vector of them) of dtype t as it is held in a register, and a register's
// value as it is stored.
llvm::Value* from_memory(llvm::IRBuilder<>& b, DType t, llvm::Value* x);
llvm::Value* to_memory(llvm::IRBuilder<>& b, DType t, llvm::Value* x);
// x (float or double, scalar or vector) rounded to dtype t's precision, to nearest even, in a
// float register: f16 and bf16 results, computed in float, are rounded after every op; x
// unchanged for the other dtypes.
llvm::Value* round_to(llvm::IRBuilder<>& b, DType t, llvm::Value* x);

// The LLVM types of dtype t's elements and of vectors of `lanes` of them, with their alignments.
struct VectorTypes {
  llvm::Type* element;
  llvm::FixedVectorType* vector;
  llvm::Align element_align, vector_align;
};
VectorTypes vector_types(llvm::LLVMContext& c, DType t, int lanes);

// Emits the body of one kernel: values of the region computed at symbolic indices.
class KernelEmitter {
 public:
  KernelEmitter(const ir::Region& r, const kernel::RegionSchedule& s, const kernel::Kernel& k, const Target& target,
                llvm::Module& m, llvm::IRBuilder<>& b);

  // The kernel's function `void name(ptr bufs, i64 begin, i64 end)` and the values whose data
  // pointers `bufs` must hold, in order.
  llvm::Function* emit(const std::string& name);
  const std::vector<ir::ValueId>& buffers() const { return buffer_values_; }
  // A split kernel's combination of its parts (Kernel::split_chunks), on a fresh emitter:
  // `void name(ptr bufs, ptr partials)` stores each folded node's partial results (a
  // reduction's, or an image-split weight gradient's), combined in part order, into its own
  // buffer; `bufs` holds buffers()' pointers.
  llvm::Function* emit_combine(const std::string& name);
  // The packing of B of a product planned shared_pack, on a fresh emitter: `void name(ptr bufs,
  // i64 begin, i64 end)` packs units [begin, end) (a unit: one panel of one k-block, k-block by
  // k-block) into the kernel's scratch bytes, which the kernel's function then reads.
  llvm::Function* emit_pack(const std::string& name);

  // The value of v at index `idx` (one i64 per dimension of v's type).
  llvm::Value* at(ir::ValueId v, const Index& idx);
  // The value of v at row-major position `flat`: a plain load when v has its own buffer.
  llvm::Value* at_flat(ir::ValueId v, llvm::Value* flat);
  // Stores x at row-major position `flat` of v's buffer.
  void store_flat(ir::ValueId v, llvm::Value* flat, llvm::Value* x);

 private:
  class Renderer;     // the shared per-element lowering's primitives (renderer.h)
  class GemmEmitter;  // the MatMul kernel's loop nest (gemm.cpp)
  class SlidingConv;  // stride-1 convolutions as sliding windows (sliding_conv.cpp)
  llvm::Value* compute(const ir::Node& n, const Index& idx);
  llvm::Value* elementwise(const ir::Node& n, const std::vector<llvm::Value*>& x, DType in, DType out);
  llvm::Value* view(const ir::Node& n, ir::ValueId v, const Index& idx);
  llvm::Value* load(ir::ValueId v, const Index& idx);
  llvm::Value* pointer(ir::ValueId v);
  // The kernel's scratch bytes (kScratchBuffer).
  llvm::Value* scratch();
  // The data pointer in `bufs` of a value, or kScratchBuffer, loaded once in the entry block.
  llvm::Value* table_pointer(ir::ValueId v);
  // Tells LLVM that f's buffers do not overlap: one alias scope per buffer.
  void mark_alias_scopes(llvm::Function* f, const std::string& name);
  // The attributes of a function with loops that vectorise (emit, emit_pack).
  void vectorised(llvm::Function* f) const;
  llvm::Value* flat(const Index& idx, const Shape& shape);
  llvm::Value* address(ir::ValueId v, const Index& idx);
  llvm::Value* constant(DType t, double v);
  llvm::Value* math(std::string_view name, DType t, std::vector<llvm::Value*> args);
  llvm::Value* intrinsic(llvm::Intrinsic::ID id, std::vector<llvm::Value*> args);
  llvm::Value* reduce_identity(ir::Op op, DType t);
  llvm::Value* combine(ir::Op op, DType t, llvm::Value* acc, llvm::Value* x);
  llvm::Value* is_nan(llvm::Value* x);
  llvm::Value* i64(int64_t v);
  void store(ir::ValueId v, const Index& idx, llvm::Value* x);
  // Loop nest over dims [from, shape.size()) of `shape`, dim 0 restricted to [lo, hi).
  void nest(const Shape& shape, llvm::Value* lo, llvm::Value* hi, const std::function<void(const Index&)>& body);
  // `known`: values already computed at idx (used instead of computing them again).
  // `accumulators`: reductions (by node index) accumulated in the given values, which are
  // updated, instead of in their results' memory.
  void body_at(const Index& idx, const std::vector<std::pair<ir::ValueId, llvm::Value*>>& known = {},
               std::map<size_t, llvm::Value*>* accumulators = nullptr);
  // The index of reduction `node`'s result at kernel index idx (idx without the folded axes).
  static Index reduced_index(const ir::Node& node, const Index& idx);
  // A Loop kernel planned PoolWindows: its max-pooling gradient (the plan's node), whose windows
  // tile its input exactly, window by window instead of element by element (pool_grad_windows.cpp).
  void pool_grad_by_windows(llvm::Value* lo, llvm::Value* hi);
  // A Scatter kernel (scatter.cpp): the result rows or outer indices of dimension-0 range
  // [lo, hi), zeroed, then the indices scanned in order.
  void scatter(llvm::Value* lo, llvm::Value* hi);
  // A Loop kernel planned Pieces, storing a concatenation (the plan's node) along an axis other
  // than 0: one loop nest per part (concat_pieces.cpp).
  void concat_by_pieces(llvm::Value* lo, llvm::Value* hi);
  void init_reductions(llvm::Value* lo, llvm::Value* hi);
  llvm::Function* begin_function(const std::string& name, const std::vector<llvm::Type*>& rest);
  // StraightLine kernels (straight_line.cpp): every element of every stored value, at constant indices;
  // a reduction or matrix product at one index is its sum written out.
  void straight_line();
  llvm::Value* fold(const ir::Node& n, const Index& idx);
  // Computes every element of elementwise node n as vectors of `lanes` elements (padded), each
  // then read back per element from memo_.
  void vector_node(const ir::Node& n, unsigned lanes);
  // A libmvec call for math function f32_name / f64_name on vectors of lanes_ elements, or
  // per-lane scalar calls where libmvec has no variant.
  llvm::Value* vector_math(std::string_view name, DType t, const std::vector<llvm::Value*>& args);
  // How a matmul operand's elements are read through its strided view: widened to f32 (f16 and
  // bf16) or as they are, or as stored (16-bit integers), or as 32-bit integers each holding
  // two consecutive elements, the first in its low half (the bf16 pairs' tiles).
  enum class Read : uint8_t { Value, Bits, Pairs };
  // `lanes` elements of a matmul operand X from X[b][r][c] on, consecutive in memory (more
  // than one only along a dimension of stride 1: the Gemm's contiguity flags say which).
  using ViewRead = std::function<llvm::Value*(const Index& b, llvm::Value* r, llvm::Value* c, int lanes, Read how)>;
  // A matrix product C[b][i][j] = sum over k of A[b][i][k] B[b][k][j], with k running in
  // `blocks` blocks: k = kb * kc + kk (matmul.cpp). The operands and the result are given by
  // accessors, so a convolution is the same kernel reading its input as im2col.
  struct Gemm {
    Shape batch;  // outer dims; dimension 0 is split across threads (rows when there is none)
    int64_t M = 0, N = 0, K = 0, kc = 0, blocks = 0;
    bool b_rows_contiguous = false;  // pack B row by row (else column by column, for im2col)
    // A matmul's operands through their views (null for a convolution).
    ViewRead a_view, b_view;
    // Whether A's rows are contiguous along k, and B's columns along k (a transposed operand:
    // packing then loads vectors along k and transposes them in registers).
    bool a_rows_contiguous = false, b_columns_contiguous = false;
    // One element as a value, k as (k-block, position in it).
    std::function<llvm::Value*(const Index& b, llvm::Value* i, llvm::Value* kb, llvm::Value* kk)> a;
    std::function<llvm::Value*(const Index& b, llvm::Value* kb, llvm::Value* kk, llvm::Value* j)> b;
    // Where a k-block is a grid (im2col: a channel's kernel taps, or an image's output pixels):
    // B[k][j] by the grid's row and column, so that packing walks them instead of dividing k.
    int64_t grid_rows = 0, grid_cols = 0;
    std::function<llvm::Value*(const Index& b, llvm::Value* kb, llvm::Value* row, llvm::Value* col, llvm::Value* j)>
        b_grid;
    // Element offset of C[b][i][j] in the result buffer (consecutive j are adjacent) and the
    // result's index there (for the epilogue).
    std::function<llvm::Value*(const Index& b, llvm::Value* i, llvm::Value* j)> c_offset;
    std::function<Index(const Index& b, llvm::Value* i, llvm::Value* j)> c_index;
  };
  Gemm matmul_gemm();
  Gemm conv_gemm();
  // A MatMul kernel by its plan: tiles, transposed tiles, sliding windows or im2col.
  void product(llvm::Value* lo, llvm::Value* hi);
  void gemm(const Gemm& g, llvm::Value* lo, llvm::Value* hi);
  // Packs units [lo, hi) of B of a product planned shared_pack (gemm.cpp).
  void gemm_pack(const Gemm& g, llvm::Value* lo, llvm::Value* hi);
  // The product of few rows by a transposed right operand, computed as C^T tiles
  // (matmul_transposed.cpp; planned TransposedTiles).
  void gemm_transposed(const Gemm& g, llvm::Value* lo, llvm::Value* hi);
  // The transpose of a square block of rows.size() vectors of as many lanes, in registers.
  std::vector<llvm::Value*> transpose_square(std::vector<llvm::Value*> rows);
  // Stride-1 convolutions as sliding windows over a staged image (sliding_conv.cpp; planned
  // Sliding where sliding_conv_fits).
  void sliding_conv(llvm::Value* lo, llvm::Value* hi);
  // A 64-byte aligned stack array, allocated in the entry block.
  llvm::Value* stack_buffer(llvm::Type* et, int64_t elements);
  void epilogue(const Index& idx);

  const ir::Region& region_;
  const kernel::RegionSchedule& schedule_;
  const kernel::Kernel& kernel_;
  Target target_;
  llvm::Module& module_;
  llvm::IRBuilder<>& builder_;
  llvm::LLVMContext& context_;
  kernel::KernelFrame frame_;
  std::vector<ir::ValueId> buffer_values_;
  std::map<ir::ValueId, llvm::Value*> pointers_;
  llvm::Value* bufs_ = nullptr;
  std::map<std::pair<ir::ValueId, Index>, llvm::Value*> memo_;
  bool collapsed_ = false;
  unsigned lanes_ = 0;  // > 0 while vector_node emits: constants are splats of this many lanes
};

}  // namespace fluxion::cpu
