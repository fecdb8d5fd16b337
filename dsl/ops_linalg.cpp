// matmul, dot, conv2d and pooling: NumPy/PyTorch-style arguments normalised to the IR's
// explicit forms (equal batch dims, four-sided padding).
#include <string>

#include "dsl/trace.h"
#include "fluxion/error.h"
#include "fluxion/ops.h"

namespace fluxion {
namespace {

using detail::require_valid;
using ir::Op;

// {v} or {a, b} -> {a, b}: a per-spatial-dimension option.
std::vector<int64_t> pair_option(const std::vector<int64_t>& v, const char* name, const char* op, const Loc& loc) {
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return v;
  detail::fail(op, std::string(name) + " " + shape_str(v) + " must have 1 or 2 values", &loc);
}

// {p}, {ph, pw} or {top, bottom, left, right} -> four sides.
std::vector<int64_t> padding_option(const std::vector<int64_t>& v, const char* op, const Loc& loc) {
  if (v.size() == 1) return {v[0], v[0], v[0], v[0]};
  if (v.size() == 2) return {v[0], v[0], v[1], v[1]};
  if (v.size() == 4) return v;
  detail::fail(op, "padding " + shape_str(v) + " must have 1, 2 or 4 values", &loc);
}

Tensor pool(Op op, const Tensor& x, const Pool2dOptions& opt, const Loc& loc) {
  const char* name = ir::op_name(op);
  require_valid(x, name, loc);
  ir::Attrs a;
  a.window = pair_option(opt.window, "window", name, loc);
  a.strides = opt.stride.empty() ? a.window : pair_option(opt.stride, "stride", name, loc);
  a.padding = padding_option(opt.padding, name, loc);
  return detail::emit1(op, {x}, loc, std::move(a));
}

// Open F16Sums scopes of this thread.
thread_local int g_f16_sums_scopes = 0;

}  // namespace

F16Sums::F16Sums() { ++g_f16_sums_scopes; }
F16Sums::~F16Sums() { --g_f16_sums_scopes; }
bool F16Sums::active() { return g_f16_sums_scopes > 0; }

Tensor matmul(const Tensor& a, const Tensor& b, Loc loc) {
  require_valid(a, "matmul", loc);
  require_valid(b, "matmul", loc);
  if (a.rank() == 0 || b.rank() == 0) {
    detail::fail("matmul", "operands " + a.type().str() + " and " + b.type().str() +
                               " must have rank >= 1 (use * for scalars)", &loc);
  }
  if (a.dtype() != b.dtype()) {
    detail::fail("matmul", "operands " + a.type().str() + " and " + b.type().str() +
                               " have different dtypes (expected equal dtypes; cast one first)", &loc);
  }
  // NumPy promotion: a vector on the left is a row, on the right a column; the added
  // dimension is removed from the result.
  Shape sa = a.shape(), sb = b.shape();
  if (a.rank() == 1) sa.insert(sa.begin(), 1);
  if (b.rank() == 1) sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k) {
    detail::fail("matmul", "inner dimensions of " + a.type().str() + " and " + b.type().str() +
                               " do not agree (expected [..., m, k] x [..., k, n])", &loc);
  }
  TensorType ba{a.dtype(), Shape(sa.begin(), sa.end() - 2)};
  TensorType bb{b.dtype(), Shape(sb.begin(), sb.end() - 2)};
  Shape batch = detail::broadcast_shapes(ba, bb, "matmul", loc);
  Shape fa = batch, fb = batch;
  fa.insert(fa.end(), {m, k});
  fb.insert(fb.end(), {k, n});
  Tensor x = detail::broadcast_as(reshape(a, sa, loc), fa, loc);
  Tensor y = detail::broadcast_as(reshape(b, sb, loc), fb, loc);
  ir::Attrs attrs;
  attrs.f16_sums = F16Sums::active() && a.dtype() == DType::f16;
  Tensor r = detail::emit1(Op::MatMul, {x, y}, loc, std::move(attrs));
  Shape out = batch;
  if (a.rank() != 1) out.push_back(m);
  if (b.rank() != 1) out.push_back(n);
  return out == r.shape() ? r : reshape(r, out, loc);
}

Tensor dot(const Tensor& a, const Tensor& b, Loc loc) {
  require_valid(a, "dot", loc);
  require_valid(b, "dot", loc);
  if (a.rank() != 1 || b.rank() != 1 || a.dim(0) != b.dim(0)) {
    detail::fail("dot", "operands " + a.type().str() + " and " + b.type().str() +
                            " must be 1-D vectors of equal length (use matmul for matrices)", &loc);
  }
  return matmul(a, b, loc);
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dOptions& opt, Loc loc) {
  require_valid(x, "conv2d", loc);
  require_valid(w, "conv2d", loc);
  ir::Attrs a;
  a.strides = pair_option(opt.stride, "stride", "conv2d", loc);
  a.padding = padding_option(opt.padding, "conv2d", loc);
  a.dilation = pair_option(opt.dilation, "dilation", "conv2d", loc);
  a.groups = opt.groups;
  return detail::emit1(Op::Conv2d, {x, w}, loc, std::move(a));
}

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& opt, Loc loc) { return pool(Op::MaxPool2d, x, opt, loc); }
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& opt, Loc loc) { return pool(Op::AvgPool2d, x, opt, loc); }

}  // namespace fluxion
