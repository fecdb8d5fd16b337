// Reductions: sum, mean, max, min over a set of axes, and argmax/argmin along one.
#include <algorithm>
#include <string>

#include "dsl/trace.h"
#include "fluxion/error.h"
#include "fluxion/ops.h"

namespace fluxion {
namespace {

using ir::Op;

// The sorted, normalised axes of `axes` for x; Error on a duplicate or out-of-range axis.
std::vector<int64_t> resolve_axes(const Tensor& x, const Axes& axes, const char* op, const Loc& loc) {
  std::vector<int64_t> out;
  if (axes.all()) {
    for (int64_t d = 0; d < x.rank(); ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : axes.list()) out.push_back(detail::norm_axis(a, x.rank(), op, loc));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    detail::fail(op, "axes " + shape_str(axes.list()) + " name a dimension twice for operand " + x.type().str(), &loc);
  }
  return out;
}

// x's shape with the reduced axes set to 1.
Shape kept_shape(const Tensor& x, const std::vector<int64_t>& axes) {
  Shape s = x.shape();
  for (int64_t a : axes) s[a] = 1;
  return s;
}

Tensor reduce(Op op, const Tensor& x, const Axes& axes, bool keepdims, const Loc& loc) {
  detail::require_valid(x, ir::op_name(op), loc);
  std::vector<int64_t> ax = resolve_axes(x, axes, ir::op_name(op), loc);
  if (ax.empty()) return x;
  ir::Attrs a;
  a.axes = ax;
  Tensor r = detail::emit1(op, {x}, loc, std::move(a));
  return keepdims ? reshape(r, kept_shape(x, ax), loc) : r;
}

Tensor arg_reduce(Op op, const Tensor& x, int64_t axis, bool keepdims, const Loc& loc) {
  detail::require_valid(x, ir::op_name(op), loc);
  int64_t ax = detail::norm_axis(axis, x.rank(), ir::op_name(op), loc);
  ir::Attrs a;
  a.axes = {ax};
  Tensor r = detail::emit1(op, {x}, loc, std::move(a));
  return keepdims ? reshape(r, kept_shape(x, {ax}), loc) : r;
}

}  // namespace

Tensor sum(const Tensor& x, Axes axes, bool keepdims, Loc loc) { return reduce(Op::ReduceSum, x, axes, keepdims, loc); }
Tensor max(const Tensor& x, Axes axes, bool keepdims, Loc loc) { return reduce(Op::ReduceMax, x, axes, keepdims, loc); }
Tensor min(const Tensor& x, Axes axes, bool keepdims, Loc loc) { return reduce(Op::ReduceMin, x, axes, keepdims, loc); }

Tensor mean(const Tensor& x, Axes axes, bool keepdims, Loc loc) {
  if (x.valid() && !is_float(x.dtype())) {
    detail::fail("mean", "operand " + x.type().str() + " must have a float dtype (cast it first)", &loc);
  }
  Tensor s = sum(x, axes, keepdims, loc);
  if (!x.valid()) return s;
  int64_t count = s.numel() == 0 ? 0 : x.numel() / s.numel();
  return s / static_cast<double>(count);
}

Tensor argmax(const Tensor& x, int64_t axis, bool keepdims, Loc loc) {
  return arg_reduce(Op::Argmax, x, axis, keepdims, loc);
}
Tensor argmin(const Tensor& x, int64_t axis, bool keepdims, Loc loc) {
  return arg_reduce(Op::Argmin, x, axis, keepdims, loc);
}

}  // namespace fluxion
