// The shape and dtype rule of every op: one function per op class. The DSL, the parser and the
// verifier all go through infer_types, so a program that type-checks here runs on every backend.
#include <algorithm>
#include <string>

#include "fluxion/error.h"
#include "ir/debug_format.h"
#include "ir/ir.h"

namespace fluxion::ir {
namespace {

std::string list_str(const std::vector<int64_t>& v) { return shape_str(v); }

std::string types_str(const std::vector<TensorType>& ts) {
  std::string out;
  for (size_t i = 0; i < ts.size(); ++i) out += (i ? ", " : "") + ts[i].str();
  return out.empty() ? "no operands" : out;
}

// Everything a rule needs to check its op and report a failure.
struct Ctx {
  Op op;
  const std::vector<TensorType>& in;
  const Attrs& a;
  const std::vector<TensorType>& declared;
  const std::vector<Region>& regions;
  const std::source_location* loc;

  [[noreturn]] void fail(const std::string& what) const {
    detail::fail(op_name(op), what + " (operands: " + types_str(in) + ")", loc);
  }
  void require(bool ok, const std::string& what) const {
    if (!ok) fail(what);
  }
  const TensorType& one_declared() const {
    require(declared.size() == 1, "expected one declared result type");
    return declared[0];
  }
  void check_axis(int64_t axis, int64_t rank, const char* what) const {
    require(axis >= 0 && axis < rank, std::string(what) + " " + std::to_string(axis) +
                                          " is out of range for rank " + std::to_string(rank));
  }
  void check_regions(size_t n) const {
    require(regions.size() == n, "expected " + std::to_string(n) + " region(s), got " +
                                     std::to_string(regions.size()));
  }
  void check_region_params(const Region& r, const std::vector<TensorType>& want,
                           const char* name) const {
    std::vector<TensorType> got = r.param_types();
    require(got == want, std::string(name) + " region takes (" + types_str(got) +
                             "), expected (" + types_str(want) + ")");
  }
};

bool dtype_ok(DTypeRule rule, DType t) {
  switch (rule) {
    case DTypeRule::Float: return is_float(t);
    case DTypeRule::Numeric: return is_numeric(t);
    case DTypeRule::Bool: return t == DType::boolean;
    case DTypeRule::Any: return true;
  }
  return false;
}

const char* dtype_rule_str(DTypeRule rule) {
  switch (rule) {
    case DTypeRule::Float: return "a float dtype (f32, f64, f16 or bf16)";
    case DTypeRule::Numeric: return "a numeric dtype (f32, f64, f16, bf16 or i32)";
    case DTypeRule::Bool: return "bool";
    case DTypeRule::Any: return "any dtype";
  }
  return "?";
}

void check_operand_dtype(const Ctx& c, size_t i) {
  DTypeRule rule = op_info(c.op).dtypes;
  c.require(dtype_ok(rule, c.in[i].dtype), std::string("operand ") + std::to_string(i) + " is " +
                                               c.in[i].str() + ", expected " +
                                               dtype_rule_str(rule));
}

void check_equal_types(const Ctx& c) {
  c.require(c.in[0] == c.in[1], "operands must have equal types (the DSL broadcasts first)");
}

std::vector<TensorType> reduce(const Ctx& c) {
  const Shape& s = c.in[0].shape;
  c.require(std::is_sorted(c.a.axes.begin(), c.a.axes.end()) &&
                std::adjacent_find(c.a.axes.begin(), c.a.axes.end()) == c.a.axes.end(),
            "axes " + list_str(c.a.axes) + " must be sorted and unique");
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (!std::binary_search(c.a.axes.begin(), c.a.axes.end(), d)) out.push_back(s[d]);
  }
  for (int64_t ax : c.a.axes) c.check_axis(ax, c.in[0].rank(), "axis");
  return {{c.in[0].dtype, out}};
}

std::vector<TensorType> arg_reduce(const Ctx& c) {
  c.require(c.a.axes.size() == 1, "expected exactly one axis");
  int64_t ax = c.a.axes[0];
  c.check_axis(ax, c.in[0].rank(), "axis");
  c.require(c.in[0].shape[ax] > 0, "cannot take an index over an empty axis");
  Shape out = c.in[0].shape;
  out.erase(out.begin() + ax);
  return {{DType::i32, out}};
}

std::vector<TensorType> matmul(const Ctx& c) {
  const Shape& a = c.in[0].shape;
  const Shape& b = c.in[1].shape;
  c.require(c.in[0].dtype == c.in[1].dtype, "operands must have the same dtype");
  c.require(a.size() >= 2 && a.size() == b.size(),
            "expected operands [..., m, k] and [..., k, n] of equal rank >= 2");
  c.require(std::equal(a.begin(), a.end() - 2, b.begin()), "batch dimensions must be equal");
  c.require(a[a.size() - 1] == b[b.size() - 2], "inner dimensions must agree (k of [m, k] and [k, n])");
  // The permission to sum in f16 is given to products of f16 values: before the pipeline widens
  // them to f32 (docs/precision.md), and after.
  c.require(!c.a.f16_sums || c.in[0].dtype == DType::f16 || c.in[0].dtype == DType::f32,
            "f16_sums applies to f16 operands (or their f32 widening)");
  Shape out(a.begin(), a.end() - 1);
  out.push_back(b.back());
  return {{c.in[0].dtype, out}};
}

// Attribute values come from files too (the parser), so size arithmetic on them is done in 128
// bits, where no int64 operands can overflow, and the result is range-checked by the caller
// (check_sizes refuses results past 2^40 elements).
using Wide = __int128;

int64_t narrow(Wide v) {
  constexpr Wide kLimit = Wide{1} << 62;
  return static_cast<int64_t>(v > kLimit ? kLimit : v < -kLimit ? -kLimit : v);
}

// Output size of a sliding window over `in` elements with the given padding, stride, dilation.
int64_t window_out(int64_t in, int64_t pad_lo, int64_t pad_hi, int64_t k, int64_t stride,
                   int64_t dilation) {
  Wide span = Wide{dilation} * (k - 1) + 1;
  Wide padded = Wide{in} + pad_lo + pad_hi;
  return padded < span ? 0 : narrow((padded - span) / stride + 1);
}

void check_window_attrs(const Ctx& c, const std::vector<int64_t>& dilation) {
  c.require(c.a.strides.size() == 2 && c.a.strides[0] >= 1 && c.a.strides[1] >= 1,
            "strides " + list_str(c.a.strides) + " must be two values >= 1");
  c.require(c.a.padding.size() == 4 && std::all_of(c.a.padding.begin(), c.a.padding.end(),
                                                  [](int64_t p) { return p >= 0; }),
            "padding " + list_str(c.a.padding) + " must be four values >= 0 (top, bottom, left, right)");
  c.require(dilation.size() == 2 && dilation[0] >= 1 && dilation[1] >= 1,
            "dilation " + list_str(dilation) + " must be two values >= 1");
}

std::vector<TensorType> conv2d(const Ctx& c) {
  const Shape& x = c.in[0].shape;
  const Shape& w = c.in[1].shape;
  c.require(c.in[0].dtype == c.in[1].dtype, "input and weight must have the same dtype");
  c.require(x.size() == 4 && w.size() == 4, "expected input [N, C, H, W] and weight [O, C/groups, KH, KW]");
  check_window_attrs(c, c.a.dilation);
  int64_t g = c.a.groups;
  c.require(g >= 1 && x[1] % g == 0 && w[0] % g == 0,
            "groups=" + std::to_string(g) + " must divide the input channels and the output channels");
  c.require(w[1] == x[1] / g, "weight has " + std::to_string(w[1]) + " input channels per group, expected " +
                                  std::to_string(x[1] / g));
  c.require(w[2] >= 1 && w[3] >= 1, "kernel must be at least 1x1");
  int64_t oh = window_out(x[2], c.a.padding[0], c.a.padding[1], w[2], c.a.strides[0], c.a.dilation[0]);
  int64_t ow = window_out(x[3], c.a.padding[2], c.a.padding[3], w[3], c.a.strides[1], c.a.dilation[1]);
  c.require(oh >= 1 && ow >= 1, "the (dilated) kernel is larger than the padded input");
  return {{c.in[0].dtype, {x[0], w[0], oh, ow}}};
}

std::vector<TensorType> pool2d(const Ctx& c) {
  const Shape& x = c.in[0].shape;
  c.require(x.size() == 4, "expected input [N, C, H, W]");
  c.require(c.a.window.size() == 2 && c.a.window[0] >= 1 && c.a.window[1] >= 1,
            "window " + list_str(c.a.window) + " must be two values >= 1");
  check_window_attrs(c, {1, 1});
  const auto& p = c.a.padding;
  c.require(p[0] < c.a.window[0] && p[1] < c.a.window[0] && p[2] < c.a.window[1] && p[3] < c.a.window[1],
            "padding must be smaller than the window");
  int64_t oh = window_out(x[2], p[0], p[1], c.a.window[0], c.a.strides[0], 1);
  int64_t ow = window_out(x[3], p[2], p[3], c.a.window[1], c.a.strides[1], 1);
  c.require(oh >= 1 && ow >= 1, "the window is larger than the padded input");
  return {{c.in[0].dtype, {x[0], x[1], oh, ow}}};
}

// The gradient ops are checked by applying the forward rule to the types they stand between.
std::vector<TensorType> forward_of(const Ctx& c, Op forward, std::vector<TensorType> in) {
  Ctx f{forward, in, c.a, {}, c.regions, c.loc};
  return forward == Op::Conv2d ? conv2d(f) : pool2d(f);
}

std::vector<TensorType> conv_grad(const Ctx& c) {
  const TensorType& t = c.one_declared();
  bool input = c.op == Op::Conv2dInputGrad;
  // input grad: (g, w) -> x with conv2d(x, w) = g; weight grad: (x, g) -> w with conv2d(x, w) = g.
  const TensorType& g = input ? c.in[0] : c.in[1];
  std::vector<TensorType> fwd = input ? forward_of(c, Op::Conv2d, {t, c.in[1]}) : forward_of(c, Op::Conv2d, {c.in[0], t});
  c.require(fwd[0] == g, "conv2d of the declared " + t.str() + " gives " + fwd[0].str() + ", not the gradient's " + g.str());
  return {t};
}

std::vector<TensorType> pool_grad(const Ctx& c) {
  if (c.op == Op::MaxPool2dSelect) {
    c.require(c.in[0] == c.in[1], "the values selected from must have the pooled input's type");
    return forward_of(c, Op::MaxPool2d, {c.in[0]});
  }
  bool is_max = c.op == Op::MaxPool2dGrad;
  TensorType x = is_max ? c.in[0] : c.one_declared();
  const TensorType& g = c.in.back();
  std::vector<TensorType> fwd = forward_of(c, is_max ? Op::MaxPool2d : Op::AvgPool2d, {x});
  c.require(fwd[0] == g, "pooling " + x.str() + " gives " + fwd[0].str() + ", not the gradient's " + g.str());
  return {x};
}

std::vector<TensorType> broadcast(const Ctx& c) {
  const TensorType& to = c.one_declared();
  const Shape& s = c.in[0].shape;
  c.require(to.dtype == c.in[0].dtype, "declared dtype must equal the operand's");
  bool ok = s.size() <= to.shape.size();
  for (size_t i = 0; ok && i < s.size(); ++i) {
    int64_t d = s[s.size() - 1 - i];
    ok = d == 1 || d == to.shape[to.shape.size() - 1 - i];
  }
  c.require(ok, "cannot broadcast to " + to.str() + " (NumPy rule: dims right-aligned, equal or 1)");
  return {to};
}

std::vector<TensorType> slice(const Ctx& c) {
  const Shape& s = c.in[0].shape;
  const Attrs& a = c.a;
  c.require(a.starts.size() == s.size() && a.limits.size() == s.size() && a.strides.size() == s.size(),
            "starts, limits and strides need one value per dimension");
  Shape out;
  for (size_t d = 0; d < s.size(); ++d) {
    c.require(a.strides[d] >= 1, "strides must be >= 1");
    c.require(0 <= a.starts[d] && a.starts[d] <= a.limits[d] && a.limits[d] <= s[d],
              "slice [" + std::to_string(a.starts[d]) + ", " + std::to_string(a.limits[d]) +
                  ") is out of range for dimension " + std::to_string(d) + " of size " + std::to_string(s[d]));
    out.push_back(narrow((Wide{a.limits[d]} - a.starts[d] + a.strides[d] - 1) / a.strides[d]));
  }
  return {{c.in[0].dtype, out}};
}

std::vector<TensorType> pad(const Ctx& c) {
  const Shape& s = c.in[0].shape;
  const Attrs& a = c.a;
  c.require(a.padding.size() == 2 * s.size() && a.strides.size() == s.size(),
            "padding needs [lo, hi] and strides one value per dimension");
  Shape out;
  for (size_t d = 0; d < s.size(); ++d) {
    c.require(a.padding[2 * d] >= 0 && a.padding[2 * d + 1] >= 0 && a.strides[d] >= 1,
              "padding must be >= 0 and strides >= 1");
    Wide spread = s[d] == 0 ? 0 : Wide{s[d] - 1} * a.strides[d] + 1;
    out.push_back(narrow(spread + a.padding[2 * d] + a.padding[2 * d + 1]));
  }
  return {{c.in[0].dtype, out}};
}

std::vector<TensorType> concat(const Ctx& c) {
  c.require(!c.in.empty(), "expected at least one operand");
  c.require(c.a.axes.size() == 1, "expected exactly one axis");
  int64_t ax = c.a.axes[0];
  c.check_axis(ax, c.in[0].rank(), "axis");
  Shape out = c.in[0].shape;
  out[ax] = 0;
  for (const TensorType& t : c.in) {
    bool same = t.dtype == c.in[0].dtype && t.rank() == c.in[0].rank();
    for (int64_t d = 0; same && d < t.rank(); ++d) same = d == ax || t.shape[d] == out[d];
    c.require(same, "operands must share dtype and every dimension but the axis");
    out[ax] += t.shape[ax];
  }
  return {{c.in[0].dtype, out}};
}

std::vector<TensorType> gather(const Ctx& c) {
  const TensorType& data = c.in[0];
  const TensorType& idx = c.in[1];
  c.require(c.a.axes.size() == 1, "expected exactly one axis");
  c.require(idx.dtype == DType::i32, "indices must be i32");
  c.require(idx.rank() == data.rank(), "indices must have the rank of the data");
  int64_t ax = c.a.axes[0];
  c.check_axis(ax, data.rank(), "axis");
  for (int64_t d = 0; d < data.rank(); ++d) {
    c.require(d == ax || idx.shape[d] == data.shape[d], "indices must match the data on every dimension but the axis");
  }
  c.require(data.shape[ax] > 0 || idx.numel() == 0, "cannot gather from an empty axis");
  return {{data.dtype, idx.shape}};
}

std::vector<TensorType> take(const Ctx& c) {
  const TensorType& data = c.in[0];
  const TensorType& idx = c.in[1];
  c.require(c.a.axes.size() == 1, "expected exactly one axis");
  c.require(idx.dtype == DType::i32, "indices must be i32");
  int64_t ax = c.a.axes[0];
  c.check_axis(ax, data.rank(), "axis");
  c.require(data.shape[ax] > 0 || idx.numel() == 0, "cannot take from an empty axis");
  Shape out(data.shape.begin(), data.shape.begin() + ax);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), data.shape.begin() + ax + 1, data.shape.end());
  return {{data.dtype, out}};
}

// updates T[A..., I..., B...], indices i32[I...] -> the declared T[A..., D, B...], the axis
// being D's position.
std::vector<TensorType> scatter_add(const Ctx& c) {
  const TensorType& t = c.one_declared();
  const TensorType& updates = c.in[0];
  const TensorType& idx = c.in[1];
  c.require(c.a.axes.size() == 1, "expected exactly one axis");
  c.require(idx.dtype == DType::i32, "indices must be i32");
  c.require(t.dtype == updates.dtype, "declared dtype must equal the updates' (declared " + t.str() + ")");
  int64_t ax = c.a.axes[0];
  c.check_axis(ax, t.rank(), "axis");
  Shape want(t.shape.begin(), t.shape.begin() + ax);
  want.insert(want.end(), idx.shape.begin(), idx.shape.end());
  want.insert(want.end(), t.shape.begin() + ax + 1, t.shape.end());
  c.require(updates.shape == want, "updates must be shaped " + shape_str(want) + " (the declared " + t.str() +
                                       " with the axis replaced by the indices' shape)");
  c.require(t.shape[ax] > 0 || idx.numel() == 0, "cannot scatter into an empty axis");
  return {t};
}

const TensorType kKeyType{DType::i32, {2}};
const TensorType kI32Scalar{DType::i32, {}};
const TensorType kBoolScalar{DType::boolean, {}};

std::vector<TensorType> scan(const Ctx& c) {
  const Attrs& a = c.a;
  c.check_regions(1);
  c.require(a.length >= 0 && a.carries >= 0 && a.xs >= 0 &&
                Wide{a.carries} + a.xs <= static_cast<Wide>(c.in.size()),
            "length, carries and xs must be >= 0 and carries + xs <= operand count");
  std::vector<TensorType> params{kI32Scalar};
  for (int64_t i = 0; i < static_cast<int64_t>(c.in.size()); ++i) {
    TensorType t = c.in[i];
    if (i >= a.carries && i < a.carries + a.xs) {
      c.require(t.rank() >= 1 && t.shape[0] == a.length,
                "per-step input " + t.str() + " must have leading dimension length=" + std::to_string(a.length));
      t.shape.erase(t.shape.begin());
    }
    params.push_back(t);
  }
  const Region& body = c.regions[0];
  c.check_region_params(body, params, "body");
  std::vector<TensorType> res = body.result_types();
  c.require(static_cast<int64_t>(res.size()) >= a.carries &&
                std::equal(c.in.begin(), c.in.begin() + a.carries, res.begin()),
            "body must return the carries with their types unchanged, then the per-step outputs; returns (" +
                types_str(res) + ")");
  for (size_t i = static_cast<size_t>(a.carries); i < res.size(); ++i) {
    res[i].shape.insert(res[i].shape.begin(), a.length);
  }
  return res;
}

std::vector<TensorType> while_loop(const Ctx& c) {
  c.check_regions(2);
  c.require(c.a.carries >= 0 && c.a.carries <= static_cast<int64_t>(c.in.size()) && c.a.max_iters >= -1,
            "carries must be within the operand count and max_iters >= -1");
  c.check_region_params(c.regions[0], c.in, "cond");
  c.check_region_params(c.regions[1], c.in, "body");
  c.require(c.regions[0].result_types() == std::vector<TensorType>{kBoolScalar},
            "cond region must return one bool[]");
  std::vector<TensorType> carries(c.in.begin(), c.in.begin() + c.a.carries);
  c.require(c.regions[1].result_types() == carries,
            "body must return the carries with their types unchanged; returns (" +
                types_str(c.regions[1].result_types()) + ")");
  return carries;
}

std::vector<TensorType> cond(const Ctx& c) {
  c.check_regions(2);
  c.require(!c.in.empty() && c.in[0] == kBoolScalar, "first operand must be the predicate, bool[]");
  std::vector<TensorType> args(c.in.begin() + 1, c.in.end());
  c.check_region_params(c.regions[0], args, "then");
  c.check_region_params(c.regions[1], args, "else");
  std::vector<TensorType> res = c.regions[0].result_types();
  c.require(res == c.regions[1].result_types(), "then returns (" + types_str(res) + ") but else returns (" +
                                                    types_str(c.regions[1].result_types()) + ")");
  return res;
}

// custom_vjp: operands [args (carries of them)..., captures...]; primal(operands) -> R;
// backward(args..., R..., adjoints of R..., captures...) -> one adjoint per arg.
std::vector<TensorType> custom_vjp(const Ctx& c) {
  c.check_regions(2);
  size_t n = static_cast<size_t>(c.a.carries);
  c.require(c.a.carries >= 0 && n <= c.in.size(), "carries (the argument count) must be within the operand count");
  c.check_region_params(c.regions[0], c.in, "primal");
  std::vector<TensorType> res = c.regions[0].result_types();
  std::vector<TensorType> want(c.in.begin(), c.in.begin() + static_cast<long>(n));
  want.insert(want.end(), res.begin(), res.end());
  want.insert(want.end(), res.begin(), res.end());
  want.insert(want.end(), c.in.begin() + static_cast<long>(n), c.in.end());
  c.check_region_params(c.regions[1], want, "backward");
  std::vector<TensorType> args(c.in.begin(), c.in.begin() + static_cast<long>(n));
  c.require(c.regions[1].result_types() == args, "the backward rule must return one adjoint per argument, typed like it; returns (" +
                                                     types_str(c.regions[1].result_types()) + ")");
  return res;
}

// custom_jvp: operands [args (carries of them)..., captures...]; primal(operands) -> R;
// tangent(args..., tangents of the args..., captures...) -> one tangent per result of R.
std::vector<TensorType> custom_jvp(const Ctx& c) {
  c.check_regions(2);
  size_t n = static_cast<size_t>(c.a.carries);
  c.require(c.a.carries >= 0 && n <= c.in.size(), "carries (the argument count) must be within the operand count");
  c.check_region_params(c.regions[0], c.in, "primal");
  std::vector<TensorType> want(c.in.begin(), c.in.begin() + static_cast<long>(n));
  want.insert(want.end(), c.in.begin(), c.in.begin() + static_cast<long>(n));
  want.insert(want.end(), c.in.begin() + static_cast<long>(n), c.in.end());
  c.check_region_params(c.regions[1], want, "tangent");
  std::vector<TensorType> res = c.regions[0].result_types();
  c.require(c.regions[1].result_types() == res, "the tangent rule must return one tangent per result, typed like it; returns (" +
                                                   types_str(c.regions[1].result_types()) + ")");
  return res;
}

std::vector<TensorType> collective(const Ctx& c) {
  c.require(c.a.ranks >= 1, "ranks must be at least 1, got " + std::to_string(c.a.ranks));
  if (c.op == Op::RankIndex) return {kI32Scalar};
  check_operand_dtype(c, 0);
  TensorType t = c.in[0];
  switch (c.op) {
    case Op::AllGather:
      c.require(t.rank() >= 1, "expected an operand of rank 1 or more (stacked along dimension 0)");
      t.shape[0] *= c.a.ranks;
      break;
    case Op::ReduceScatterSum:
      c.require(t.rank() >= 1 && t.shape[0] % c.a.ranks == 0,
                "dimension 0 must be a multiple of ranks=" + std::to_string(c.a.ranks));
      t.shape[0] /= c.a.ranks;
      break;
    case Op::BroadcastFrom:
      c.require(c.a.root >= 0 && c.a.root < c.a.ranks,
                "root " + std::to_string(c.a.root) + " is not a rank of a job of " + std::to_string(c.a.ranks));
      break;
    default: break;
  }
  return {t};
}

std::vector<TensorType> declared_op(const Ctx& c) {
  const TensorType& t = c.one_declared();
  switch (op_info(c.op).cls) {
    case OpClass::Convert:
      c.require(t.shape == c.in[0].shape, "convert keeps the shape; declared " + t.str());
      break;
    case OpClass::Constant:
      c.require(c.a.data.size() == 1 || static_cast<int64_t>(c.a.data.size()) == t.numel(),
                "constant needs 1 value or " + std::to_string(t.numel()) + ", has " +
                    std::to_string(c.a.data.size()));
      break;
    case OpClass::Iota:
      c.require(is_numeric(t.dtype), "iota needs a numeric dtype");
      c.require(c.a.axes.size() == 1, "expected exactly one axis");
      c.check_axis(c.a.axes[0], t.rank(), "axis");
      break;
    case OpClass::Reshape:
      c.require(t.dtype == c.in[0].dtype && t.numel() == c.in[0].numel(),
                "cannot reshape to " + t.str() + ": element count or dtype differs");
      break;
    case OpClass::Random:
      c.require(c.in[0] == kKeyType, "key must be i32[2]");
      c.require(is_float(t.dtype), "random values need a float dtype, declared " + t.str());
      break;
    default:
      break;
  }
  return {t};
}

}  // namespace

namespace {

std::vector<TensorType> rule(const Ctx& c);

// Every value must have a countable size: element counts are computed in int64 everywhere, so
// a shape whose product overflows (or is absurdly large) is refused here, once.
constexpr int64_t kMaxElements = int64_t{1} << 40;

void check_sizes(const Ctx& c, const std::vector<TensorType>& types) {
  for (const TensorType& t : types) {
    int64_t n = 1;
    for (int64_t d : t.shape) {
      c.require(d >= 0, "result type " + t.str() + " has a negative dimension");
      c.require(d == 0 || n <= kMaxElements / d, "result type " + t.str() + " has more than 2^40 elements");
      n *= d;
    }
  }
}

}  // namespace

std::vector<TensorType> infer_types(Op op, const std::vector<TensorType>& in, const Attrs& attrs,
                                    const std::vector<TensorType>& declared,
                                    const std::vector<Region>& regions,
                                    const std::source_location* loc) {
  Ctx c{op, in, attrs, declared, regions, loc};
  check_sizes(c, declared);
  std::vector<TensorType> out = rule(c);
  check_sizes(c, out);
  return out;
}

namespace {

std::vector<TensorType> rule(const Ctx& c) {
  Op op = c.op;
  const std::vector<TensorType>& in = c.in;
  const Attrs& attrs = c.a;
  const OpInfo& info = op_info(op);
  c.require(info.arity < 0 || static_cast<int>(in.size()) == info.arity,
            "expected " + std::to_string(info.arity) + " operand(s), got " + std::to_string(in.size()));
  if (!has_regions(op)) c.check_regions(0);
  c.require(!attrs.f16_sums || info.cls == OpClass::MatMul, "f16_sums applies to matmul only");
  switch (info.cls) {
    case OpClass::Unary:
      check_operand_dtype(c, 0);
      return {in[0]};
    case OpClass::Binary:
      check_equal_types(c);
      check_operand_dtype(c, 0);
      return {in[0]};
    case OpClass::Compare:
      check_equal_types(c);
      check_operand_dtype(c, 0);
      return {{DType::boolean, in[0].shape}};
    case OpClass::Select:
      c.require(in[0].dtype == DType::boolean && in[0].shape == in[1].shape && in[1] == in[2],
                "expected select(bool[S], T[S], T[S])");
      return {in[1]};
    case OpClass::Reduce:
      check_operand_dtype(c, 0);
      return reduce(c);
    case OpClass::ArgReduce:
      check_operand_dtype(c, 0);
      return arg_reduce(c);
    case OpClass::MatMul:
      check_operand_dtype(c, 0);
      return matmul(c);
    case OpClass::Conv:
      check_operand_dtype(c, 0);
      return conv2d(c);
    case OpClass::Pool:
      check_operand_dtype(c, 0);
      return pool2d(c);
    case OpClass::ConvGrad:
      check_operand_dtype(c, 0);
      return conv_grad(c);
    case OpClass::PoolGrad:
      check_operand_dtype(c, 0);
      return pool_grad(c);
    case OpClass::Transpose: {
      std::vector<int64_t> sorted = attrs.perm;
      std::sort(sorted.begin(), sorted.end());
      bool is_perm = static_cast<int64_t>(sorted.size()) == in[0].rank();
      for (size_t i = 0; is_perm && i < sorted.size(); ++i) is_perm = sorted[i] == static_cast<int64_t>(i);
      c.require(is_perm, "perm " + list_str(attrs.perm) + " is not a permutation of the dimensions");
      TensorType t{in[0].dtype, {}};
      for (int64_t p : attrs.perm) t.shape.push_back(in[0].shape[p]);
      return {t};
    }
    case OpClass::Broadcast: return broadcast(c);
    case OpClass::Slice: return slice(c);
    case OpClass::Pad: return pad(c);
    case OpClass::Concat: return concat(c);
    case OpClass::Gather: return gather(c);
    case OpClass::Take: return take(c);
    case OpClass::ScatterAdd: check_operand_dtype(c, 0); return scatter_add(c);
    case OpClass::RngFold:
      c.require(in[0] == kKeyType && in[1] == kI32Scalar, "expected rng_fold(i32[2], i32[])");
      return {kKeyType};
    case OpClass::Collective: return collective(c);
    case OpClass::Debug: {
      c.require(attrs.text.find('\0') == std::string::npos, "the format holds a NUL character");
      std::string wrong;
      int64_t fields = format_fields(attrs.text, &wrong);
      c.require(fields >= 0, wrong);
      c.require(fields == static_cast<int64_t>(in.size()), "the format \"" + attrs.text + "\" has " +
                                                               std::to_string(fields) + " field(s) for " +
                                                               std::to_string(in.size()) + " operand(s)");
      return {};
    }
    case OpClass::Scan: return scan(c);
    case OpClass::While: return while_loop(c);
    case OpClass::Cond: return cond(c);
    case OpClass::CustomVjp: return custom_vjp(c);
    case OpClass::CustomJvp: return custom_jvp(c);
    case OpClass::Convert:
    case OpClass::Constant:
    case OpClass::Iota:
    case OpClass::Reshape:
    case OpClass::Random:
      return declared_op(c);
  }
  c.fail("unknown op");
}

}  // namespace
}  // namespace fluxion::ir
