// Views and data movement: reshape and its variants, transpose, broadcast, slice, pad,
// concat, stack, gather, take, one_hot.
#include <algorithm>
#include <string>

#include "dsl/trace.h"
#include "fluxion/error.h"
#include "fluxion/ops.h"

namespace fluxion {
namespace {

using detail::require_valid;
using ir::Op;

// Python slice semantics for one dimension: negative indices count from the end, then clamp.
int64_t clamp_index(int64_t i, int64_t dim) {
  if (i < 0) i += dim;
  return std::clamp<int64_t>(i, 0, dim);
}

}  // namespace

Tensor reshape(const Tensor& x, std::vector<int64_t> shape, Loc loc) {
  require_valid(x, "reshape", loc);
  int64_t known = 1;
  int infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && infer < 0) {
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      detail::fail("reshape", "cannot reshape " + x.type().str() + " to " + shape_str(shape) +
                                  " (expected dimensions >= 0 and at most one -1)", &loc);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0) {
      detail::fail("reshape", "cannot reshape " + x.type().str() + " to " + shape_str(shape) +
                                  ": the -1 dimension cannot be inferred", &loc);
    }
    shape[static_cast<size_t>(infer)] = x.numel() / known;
  }
  if (numel(shape) != x.numel()) {
    detail::fail("reshape", "cannot reshape " + x.type().str() + " (" + std::to_string(x.numel()) +
                                " elements) to " + shape_str(shape) + " (" + std::to_string(numel(shape)) + ")",
                 &loc);
  }
  if (shape == x.shape()) return x;
  return detail::emit1(Op::Reshape, {x}, loc, {}, {TensorType{x.dtype(), shape}});
}

Tensor flatten(const Tensor& x, int64_t start_axis, Loc loc) {
  require_valid(x, "flatten", loc);
  if (x.rank() == 0) return reshape(x, {1}, loc);
  int64_t a = detail::norm_axis(start_axis, x.rank(), "flatten", loc);
  // The product of the trailing dimensions, not -1: a zero-size input has no inferable -1.
  Shape s(x.shape().begin(), x.shape().begin() + a);
  s.push_back(numel(Shape(x.shape().begin() + a, x.shape().end())));
  return reshape(x, s, loc);
}

Tensor squeeze(const Tensor& x, int64_t axis, Loc loc) {
  require_valid(x, "squeeze", loc);
  int64_t a = detail::norm_axis(axis, x.rank(), "squeeze", loc);
  if (x.shape()[a] != 1) {
    detail::fail("squeeze", "dimension " + std::to_string(a) + " of " + x.type().str() + " has size " +
                                std::to_string(x.shape()[a]) + ", expected 1", &loc);
  }
  Shape s = x.shape();
  s.erase(s.begin() + a);
  return reshape(x, s, loc);
}

Tensor expand_dims(const Tensor& x, int64_t axis, Loc loc) {
  require_valid(x, "expand_dims", loc);
  int64_t a = detail::norm_axis(axis, x.rank() + 1, "expand_dims", loc);
  Shape s = x.shape();
  s.insert(s.begin() + a, 1);
  return reshape(x, s, loc);
}

Tensor transpose(const Tensor& x, Loc loc) {
  require_valid(x, "transpose", loc);
  std::vector<int64_t> perm;
  for (int64_t d = x.rank() - 1; d >= 0; --d) perm.push_back(d);
  return permute(x, perm, loc);
}

Tensor permute(const Tensor& x, std::vector<int64_t> perm, Loc loc) {
  require_valid(x, "transpose", loc);
  if (static_cast<int64_t>(perm.size()) != x.rank()) {
    detail::fail("transpose", "perm " + shape_str(perm) + " must name every dimension of " + x.type().str(), &loc);
  }
  for (int64_t& p : perm) p = detail::norm_axis(p, x.rank(), "transpose", loc);
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == static_cast<int64_t>(i);
  if (identity) return x;
  ir::Attrs a;
  a.perm = std::move(perm);
  return detail::emit1(Op::Transpose, {x}, loc, std::move(a));
}

Tensor broadcast_to(const Tensor& x, std::vector<int64_t> shape, Loc loc) {
  require_valid(x, "broadcast", loc);
  if (shape == x.shape()) return x;
  return detail::emit1(Op::Broadcast, {x}, loc, {}, {TensorType{x.dtype(), std::move(shape)}});
}

Tensor slice(const Tensor& x, std::vector<int64_t> starts, std::vector<int64_t> stops,
             std::vector<int64_t> steps, Loc loc) {
  require_valid(x, "slice", loc);
  if (steps.empty()) steps.assign(static_cast<size_t>(x.rank()), 1);
  size_t r = static_cast<size_t>(x.rank());
  if (starts.size() != r || stops.size() != r || steps.size() != r) {
    detail::fail("slice", "starts, stops and steps need one value per dimension of " + x.type().str(), &loc);
  }
  ir::Attrs a;
  for (size_t d = 0; d < r; ++d) {
    if (steps[d] < 1) {
      detail::fail("slice", "step " + std::to_string(steps[d]) + " on dimension " + std::to_string(d) +
                                " must be >= 1", &loc);
    }
    int64_t lo = clamp_index(starts[d], x.shape()[d]);
    a.starts.push_back(lo);
    a.limits.push_back(std::max(lo, clamp_index(stops[d], x.shape()[d])));
    a.strides.push_back(steps[d]);
  }
  return detail::emit1(Op::Slice, {x}, loc, std::move(a));
}

Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step, Loc loc) {
  require_valid(x, "slice", loc);
  int64_t ax = detail::norm_axis(axis, x.rank(), "slice", loc);
  std::vector<int64_t> starts(static_cast<size_t>(x.rank()), 0), stops = x.shape(),
      steps(static_cast<size_t>(x.rank()), 1);
  starts[ax] = start;
  stops[ax] = stop;
  steps[ax] = step;
  return slice(x, starts, stops, steps, loc);
}

Tensor pad(const Tensor& x, const std::vector<std::pair<int64_t, int64_t>>& widths, Loc loc) {
  require_valid(x, "pad", loc);
  if (static_cast<int64_t>(widths.size()) != x.rank()) {
    detail::fail("pad", "widths need one {before, after} pair per dimension of " + x.type().str(), &loc);
  }
  ir::Attrs a;
  for (auto [lo, hi] : widths) a.padding.insert(a.padding.end(), {lo, hi});
  a.strides.assign(widths.size(), 1);
  return detail::emit1(Op::Pad, {x}, loc, std::move(a));
}

Tensor concat(const std::vector<Tensor>& xs, int64_t axis, Loc loc) {
  if (xs.empty()) detail::fail("concat", "expected at least one Tensor", &loc);
  for (const Tensor& t : xs) require_valid(t, "concat", loc);
  if (xs.size() == 1) return xs[0];
  ir::Attrs a;
  a.axes = {detail::norm_axis(axis, xs[0].rank(), "concat", loc)};
  return detail::emit1(Op::Concat, xs, loc, std::move(a));
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis, Loc loc) {
  if (xs.empty()) detail::fail("stack", "expected at least one Tensor", &loc);
  require_valid(xs[0], "stack", loc);
  int64_t ax = detail::norm_axis(axis, xs[0].rank() + 1, "stack", loc);
  std::vector<Tensor> parts;
  for (const Tensor& t : xs) {
    require_valid(t, "stack", loc);
    if (t.shape() != xs[0].shape()) {
      detail::fail("stack", "Tensors " + xs[0].type().str() + " and " + t.type().str() +
                                " must have equal shapes", &loc);
    }
    parts.push_back(expand_dims(t, ax, loc));
  }
  return concat(parts, ax, loc);
}

Tensor gather(const Tensor& x, const Tensor& indices, int64_t axis, Loc loc) {
  require_valid(x, "gather", loc);
  require_valid(indices, "gather", loc);
  if (indices.dtype() != DType::i32) {
    detail::fail("gather", "indices must be i32, got " + indices.type().str() + " (x " + x.type().str() + ")", &loc);
  }
  int64_t ax = detail::norm_axis(axis, x.rank(), "gather", loc);
  ir::Attrs a;
  a.axes = {ax};
  if (indices.rank() == x.rank() - 1) {
    return squeeze(detail::emit1(Op::Gather, {x, expand_dims(indices, ax, loc)}, loc, std::move(a)), ax, loc);
  }
  return detail::emit1(Op::Gather, {x, indices}, loc, std::move(a));
}

Tensor take(const Tensor& x, const Tensor& indices, int64_t axis, Loc loc) {
  require_valid(x, "take", loc);
  ir::Attrs a;
  a.axes = {detail::norm_axis(axis, x.rank(), "take", loc)};
  return detail::emit1(Op::Take, {x, indices}, loc, std::move(a));
}

Tensor scatter_add(const Tensor& updates, const Tensor& indices, int64_t dim, int64_t axis, Loc loc) {
  require_valid(updates, "scatter_add", loc);
  require_valid(indices, "scatter_add", loc);
  auto fail = [&](const std::string& what) {
    detail::fail("scatter_add", what + " (updates " + updates.type().str() + ", indices " + indices.type().str() + ")",
                 &loc);
  };
  if (indices.dtype() != DType::i32) fail("indices must be i32");
  if (!is_numeric(updates.dtype())) fail("updates must have a numeric dtype (f32, f64, f16, bf16 or i32)");
  if (updates.rank() < indices.rank()) fail("updates must have at least the indices' rank");
  if (dim < 0 || (dim == 0 && indices.numel() > 0)) {
    fail("dim " + std::to_string(dim) + " must be > 0 (0 only without indices)");
  }
  int64_t ax = detail::norm_axis(axis, updates.rank() - indices.rank() + 1, "scatter_add", loc);
  const Shape& us = updates.shape();
  Shape at(us.begin() + ax, us.begin() + ax + indices.rank());
  if (at != indices.shape()) {
    fail("updates must hold the indices' shape " + shape_str(indices.shape()) + " at axis " + std::to_string(ax) +
         ", not " + shape_str(at));
  }
  Shape out(us.begin(), us.begin() + ax);
  out.push_back(dim);
  out.insert(out.end(), us.begin() + ax + indices.rank(), us.end());
  ir::Attrs a;
  a.axes = {ax};
  return detail::emit1(Op::ScatterAdd, {updates, indices}, loc, std::move(a), {TensorType{updates.dtype(), out}});
}

Tensor one_hot(const Tensor& indices, int64_t depth, DType dtype, Loc loc) {
  require_valid(indices, "one_hot", loc);
  if (indices.dtype() != DType::i32 || depth < 0) {
    detail::fail("one_hot", "expected i32 indices and depth >= 0, got " + indices.type().str() +
                                " and depth " + std::to_string(depth), &loc);
  }
  Shape s = indices.shape();
  s.push_back(depth);
  ir::Attrs a;
  a.axes = {indices.rank()};
  Tensor classes = detail::emit1(Op::Iota, {}, loc, std::move(a), {TensorType{DType::i32, s}});
  Tensor idx = detail::broadcast_as(expand_dims(indices, -1, loc), s, loc);
  return cast(eq(idx, classes, loc), dtype, loc);
}

}  // namespace fluxion
