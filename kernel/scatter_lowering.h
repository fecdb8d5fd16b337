// scatter_add's per-element code (lowering.h), shared by the backends' Scatter kernels. With the
// result seen as [outer, rows, inner] (the dimensions before the axis, the axis, the dimensions
// after it), the updates as [outer, count, inner] and the indices as [count], the result is
//   out[a, c, b] = sum over i = 0, 1, ..., count - 1 with clamp(indices[i]) == c of updates[a, i, b]
// added in that order, starting from +0. A schedule gives every result element to one thread or
// invocation, which zeroes it and then scans the indices in order, adding the updates of the
// rows it owns: no atomics, and no order that depends on which thread runs first, so the sums
// are the same bits on every backend (the reference evaluator adds in the same order) and in
// every run. Operands are read by flat position: the fuser stores them (fuse.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"
#include "kernel/lowering.h"

namespace fluxion::kernel {

struct ScatterGeometry {
  ir::ValueId updates = -1, indices = -1, result = -1;
  DType dtype = DType::f32;
  int64_t outer = 1;  // elements of the result's dimensions before the axis
  int64_t rows = 0;   // the axis: the rows updates are added into
  int64_t count = 0;  // indices
  int64_t inner = 1;  // elements of the result's dimensions after the axis (one row's columns)
};

inline ScatterGeometry scatter_geometry(const ir::Region& r, const ir::Node& n) {
  ScatterGeometry g;
  g.updates = n.operands[0];
  g.indices = n.operands[1];
  g.result = n.results[0];
  const TensorType& t = r.type(g.result);
  g.dtype = t.dtype;
  auto ax = static_cast<size_t>(n.attrs.axes[0]);
  for (size_t d = 0; d < t.shape.size(); ++d) {
    if (d < ax) g.outer *= t.shape[d];
    if (d > ax) g.inner *= t.shape[d];
  }
  g.rows = t.shape[ax];
  g.count = r.type(g.indices).numel();
  return g;
}

// A sorted scatter's index order (Kernel::scratch_bytes), in i32 words: [0, rows) one cursor
// per row; [rows, 2 rows + 1) where each row's run starts (the last entry is `count`); then the
// `count` indices i sorted by clamped row and, within a row, increasing. Summing a row's run in
// that order adds exactly what the scan adds, in the same order: the same bits.
inline int64_t scatter_order_words(const ScatterGeometry& g) { return 2 * g.rows + 1 + g.count; }

// Flat position of [a, row, col] in an array [outer, rows, inner].
template <class Builder, class V>
V scatter_position(Builder& b, V a, V row, V col, int64_t rows, int64_t inner) {
  return b.index_add(b.index_mul(b.index_add(b.index_mul(a, b.index(rows)), row), b.index(inner)), col);
}

// The scan of a thread that owns rows [lo, hi) of the result (at some outer indices and
// columns): for each index i in increasing order whose clamped row c lies in [lo, hi), calls
// add(i, c), which adds update row i into result row c at the columns it owns (scatter_element).
template <class Builder, class V, class Add>
void scatter_scan(Builder& b, const ScatterGeometry& g, const V& lo, const V& hi, Add&& add) {
  b.loop(0, g.count, {}, [&](V i, const std::vector<V>&) {
    V c = b.bind(b.clamp_index(b.element_to_index(b.at_flat(g.indices, i)), g.rows));
    V mine = b.logic_and(b.index_compare(Compare::Ge, c, lo), b.index_compare(Compare::Lt, c, hi));
    b.when(mine, [&] { add(i, c); });
    return std::vector<V>{};
  });
}

// One step of a sum: out[a, c, col] += updates[a, i, col], a plain add in the dtype (never fused
// into a multiply-add, never reassociated).
template <class Builder, class V>
void scatter_element(Builder& b, const ScatterGeometry& g, const V& a, const V& i, const V& c, const V& col) {
  V dst = b.bind(scatter_position(b, a, c, col, g.rows, g.inner));
  V x = b.at_flat(g.updates, scatter_position(b, a, i, col, g.count, g.inner));
  b.store_flat(g.result, dst, b.add(b.at_flat(g.result, dst), x, g.dtype));
}

// Zeroes out[a, c, col] (before any scan adds into it).
template <class Builder, class V>
void scatter_zero(Builder& b, const ScatterGeometry& g, const V& a, const V& c, const V& col) {
  b.store_flat(g.result, scatter_position(b, a, c, col, g.rows, g.inner), b.constant(g.dtype, 0));
}

}  // namespace fluxion::kernel
