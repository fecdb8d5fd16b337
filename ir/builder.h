// A small emitter of graph-IR ops on a Region, for the transforms that write IR (autodiff's
// rules, batching, the DSL's vmap). Operands must already have the types the op's shape rule wants: there is no
// broadcasting here, unlike in the DSL.
#pragma once

#include <vector>

#include "ir/ir.h"

namespace fluxion::ir {

class Builder {
 public:
  explicit Builder(ir::Region& r) : region_(r) {}

  // Copies, not references: every op emitted grows the region's type table, which would
  // invalidate a reference held across the call.
  TensorType type(ir::ValueId v) const { return region_.type(v); }
  ir::Region& region() { return region_; }
  Shape shape(ir::ValueId v) const { return region_.type(v).shape; }

  ir::ValueId op(ir::Op op, std::vector<ir::ValueId> operands, ir::Attrs attrs = {},
                 std::vector<TensorType> declared = {}) {
    return region_.add(op, std::move(operands), std::move(attrs), std::move(declared))[0];
  }
  ir::ValueId unary(ir::Op o, ir::ValueId x) { return op(o, {x}); }
  ir::ValueId binary(ir::Op o, ir::ValueId a, ir::ValueId b) { return op(o, {a, b}); }
  ir::ValueId add(ir::ValueId a, ir::ValueId b) { return binary(ir::Op::Add, a, b); }
  ir::ValueId sub(ir::ValueId a, ir::ValueId b) { return binary(ir::Op::Sub, a, b); }
  ir::ValueId mul(ir::ValueId a, ir::ValueId b) { return binary(ir::Op::Mul, a, b); }
  ir::ValueId div(ir::ValueId a, ir::ValueId b) { return binary(ir::Op::Div, a, b); }
  ir::ValueId neg(ir::ValueId a) { return unary(ir::Op::Neg, a); }

  // A constant of `t` with every element `value`.
  ir::ValueId splat(double value, const TensorType& t);
  // A constant shaped like v.
  ir::ValueId splat_like(double value, ir::ValueId v) { return splat(value, type(v)); }
  // v * c for a scalar constant c.
  ir::ValueId scale(ir::ValueId v, double c) { return mul(v, splat_like(c, v)); }
  // select(c, v, 0).
  ir::ValueId mask(ir::ValueId c, ir::ValueId v) { return op(ir::Op::Select, {c, v, splat_like(0, v)}); }

  ir::ValueId reshape(ir::ValueId v, const Shape& s);
  ir::ValueId broadcast(ir::ValueId v, const Shape& s);
  ir::ValueId transpose(ir::ValueId v, std::vector<int64_t> perm);
  ir::ValueId convert(ir::ValueId v, DType t);
  // Sum over `axes` (sorted), removing them; v itself when axes is empty.
  ir::ValueId reduce_sum(ir::ValueId v, const std::vector<int64_t>& axes);
  // Swaps the last two dimensions.
  ir::ValueId transpose_last2(ir::ValueId v);
  // Sums v (shape S) down to `to`, the inverse of NumPy broadcasting from `to` to S.
  ir::ValueId unbroadcast(ir::ValueId v, const Shape& to);
  // v (reduced over `axes` of `full`) broadcast back to `full`.
  ir::ValueId expand_reduced(ir::ValueId v, const std::vector<int64_t>& axes, const Shape& full);
  // Elementwise sum of vs (all of one type), left to right.
  ir::ValueId sum_all(const std::vector<ir::ValueId>& vs);

 private:
  ir::Region& region_;
};

}  // namespace fluxion::ir
