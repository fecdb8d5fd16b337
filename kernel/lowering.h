// The per-element lowering every backend shares. What one element of an op computes (its
// arithmetic, its index math, its loops over taps and windows, its edge-case rules) is written
// once, as templates over a Builder; a backend renders the Builder's primitives in its own terms
// (LLVM values on the CPU, GLSL expressions and statements on Vulkan), the way Halide lowers a
// Stmt once before any CodeGen prints it. Schedules (how elements are grouped into loops and
// threads, register tiles, workgroups) stay the backends' own.
//
//   elementwise_lowering.h  unary, binary, compare, select and convert ops
//   view_lowering.h         reshape, transpose, broadcast, slice, pad, concat, gather, take
//   gather_lowering.h       convolutions, pooling, arg-reductions, random numbers, the integer
//                           matmul, and the combine step of reductions
//   scatter_lowering.h      scatter_add: the scan of the indices and each step of its sums
//
// A Builder provides, with V its value type (a scalar, or on the CPU a vector of lanes in
// elementwise code):
//
// Elements, of a dtype t:
//   V constant(DType t, double v)
//   V neg(V a, DType t)      V add(V a, V b, DType t)   V sub(V a, V b, DType t)
//   V mul(V a, V b, DType t) V fdiv(V a, V b, DType t)  (IEEE division)
//   V idiv(V a, V b)         signed i32 division; b is never 0, nor -1
//   V mul_add(V x, V y, V acc, DType t)   acc + x * y, which may be fused
//   V sum(V acc, V x, DType t)            acc + x as a step of a reduction, which may be
//                            reassociated
//   V compare(Compare c, V a, V b, DType t)  floats: ordered, except Ne, which is unordered
//   V select(V cond, V a, V b)   V logic_and(V a, V b)   V logic_or(V a, V b)   V logic_not(V a)
//   V is_nan(V a)            V abs(V a, DType t)
//   V max(V a, V b, DType t) V min(V a, V b, DType t)   floats: NaN if either is NaN
//   V math(std::string_view f, DType t, std::vector<V> args)   the C math function f
//                            (double-precision name, e.g. "expm1") at dtype t
//   V bind(V x, DType t)     an element used again and again (a fold's accumulator), computed
//                            once: a variable in text, where each use would repeat it
//   V convert(V a, DType from, DType to)   numeric to numeric, never from or to bool; float
//                            to i32 is only asked for values in range, never NaN; to f16 or
//                            bf16 from f64 or i32, a value round_to rounds once (a float
//                            rounded to odd, or a double)
//   V round_to(V x, DType t)  x (an f32 register) rounded to f16 or bf16, ties to even
//
// Indices (i64 on the CPU, int in GLSL), never negative where they address an element:
//   V index(int64_t c)       V index_add(V a, V b)   V index_sub(V a, V b)   V index_mul(V a, V b)
//   V index_div(V a, int64_t d)   V index_rem(V a, int64_t d)   d > 0; exact for a >= 0, any
//                            value for a < 0 (callers then discard the result)
//   V index_compare(Compare c, V a, V b)   signed
//   V clamp_index(V i, int64_t dim)        i clamped to [0, dim - 1]
//   V bind(V i)              an index used more than once, computed once (a variable in text)
//   V element_to_index(V x)  an i32 element as an index
//   V index_to_element(V i, DType t)       an index as an i32 or float element
//
// Data and control:
//   V at(ir::ValueId v, const std::vector<V>& idx)   value v of the region at index idx
//   V at_flat(ir::ValueId v, V flat)   stored value v at row-major position flat, read from
//                            memory now (not remembered: a Scatter kernel writes what it reads)
//   void store_flat(ir::ValueId v, V flat, V x)   stores x at row-major position flat of v
//   void when(V cond, body())   runs body only where cond holds
//   std::vector<V> loop(int64_t lo, int64_t hi, const std::vector<Carried<V>>& carried,
//                       body(V i, const std::vector<V>& carried) -> std::vector<V>)
//                            for i in [lo, hi), the carried values updated by body; returns
//                            them after the loop. Values computed in body stay inside it.
//   V random(ir::Op op, DType t, V key0, V key1, V counter)   rng_uniform / rng_normal: the
//                            number of Philox4x32-10's words at (counter, 0, 0, 0) under
//                            key (key0, key1), as runtime/philox.h turns words into numbers
//   V rng_fold(V key0, V key1, V data, V word)   word `word` of Philox at (data, 0, 1, 0)
#pragma once

#include <cstdint>
#include <vector>

#include "fluxion/dtype.h"

namespace fluxion::kernel {

enum class Compare : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };

// A value a loop carries from one iteration to the next: an element of `dtype`, or an index.
template <class V>
struct Carried {
  V init;
  DType dtype = DType::i32;
  bool index = false;
  static Carried element(V init, DType t) { return {init, t, false}; }
  static Carried of_index(V init) { return {init, DType::i32, true}; }
};

// Row-major position of index idx in an array of shape `shape`.
template <class Builder, class V>
V flat_index(Builder& b, const std::vector<V>& idx, const Shape& shape) {
  if (shape.empty()) return b.index(0);
  V f = idx[0];
  for (size_t d = 1; d < shape.size(); ++d) f = b.index_add(b.index_mul(f, b.index(shape[d])), idx[d]);
  return f;
}

// i * scale + offset, without the identities (they would clutter GLSL text).
template <class Builder, class V>
V index_affine(Builder& b, V i, int64_t scale, int64_t offset) {
  if (scale != 1) i = b.index_mul(i, b.index(scale));
  return offset == 0 ? i : b.index_add(i, b.index(offset));
}

}  // namespace fluxion::kernel
