// Reductions (sum, max, min over a set of axes) and argmax/argmin along one axis.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "eval/buffer.h"

namespace fluxion::eval {
namespace {

using ir::Op;

// Position of input index `idx` in the output: the kept dimensions, in order.
int64_t out_index(const std::vector<int64_t>& idx, const std::vector<bool>& reduced, const Shape& out_shape) {
  int64_t f = 0;
  size_t k = 0;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (!reduced[d]) f = f * out_shape[k++] + idx[d];
  }
  return f;
}

double identity(Op op, DType t) {
  bool i = t == DType::i32;
  switch (op) {
    case Op::ReduceMax: return i ? std::numeric_limits<int32_t>::min() : -std::numeric_limits<double>::infinity();
    case Op::ReduceMin: return i ? std::numeric_limits<int32_t>::max() : std::numeric_limits<double>::infinity();
    default: return 0;
  }
}

// The accumulated value after folding in x; NaN wins for max and min.
double combine(Op op, double acc, double x) {
  switch (op) {
    case Op::ReduceSum: return acc + x;
    case Op::ReduceMax:
      return std::isnan(acc) || std::isnan(x) ? std::numeric_limits<double>::quiet_NaN() : std::max(acc, x);
    case Op::ReduceMin:
      return std::isnan(acc) || std::isnan(x) ? std::numeric_limits<double>::quiet_NaN() : std::min(acc, x);
    default: return acc;
  }
}

// Whether x replaces the current extreme best: strictly better, or the first NaN.
bool better(Op op, double x, double best) {
  if (std::isnan(best)) return false;
  if (std::isnan(x)) return true;
  return op == Op::Argmax ? x > best : x < best;
}

}  // namespace

Buffer eval_reduce(const ir::Node& n, const Buffer& x, const TensorType& out) {
  const Shape& s = x.type.shape;
  std::vector<bool> reduced(s.size(), false);
  for (int64_t a : n.attrs.axes) reduced[static_cast<size_t>(a)] = true;
  Buffer r = zeros(out);
  if (n.op == Op::Argmax || n.op == Op::Argmin) {
    std::vector<double> best(r.v.size());
    std::vector<bool> seen(r.v.size(), false);
    size_t axis = static_cast<size_t>(n.attrs.axes[0]);
    std::vector<int64_t> idx(s.size(), 0);
    for (size_t i = 0; i < x.v.size(); ++i, next_index(idx, s)) {
      size_t o = static_cast<size_t>(out_index(idx, reduced, out.shape));
      double v = x.v[i];
      if (!seen[o] || better(n.op, v, best[o])) {
        seen[o] = true;
        best[o] = v;
        r.v[o] = static_cast<double>(idx[axis]);
      }
    }
    return r;
  }
  if (n.op == Op::ReduceSum && out.dtype == DType::i32) {
    // Exact modulo 2^64, then wrapped to 32 bits (a double would lose low bits past 2^53).
    std::vector<uint64_t> acc(r.v.size(), 0);
    std::vector<int64_t> idx(s.size(), 0);
    for (size_t i = 0; i < x.v.size(); ++i, next_index(idx, s)) {
      size_t o = static_cast<size_t>(out_index(idx, reduced, out.shape));
      acc[o] += static_cast<uint64_t>(static_cast<int64_t>(x.v[i]));
    }
    for (size_t o = 0; o < acc.size(); ++o)
      r.v[o] = static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(acc[o])));
    return r;
  }
  // Float sums, and max/min of any dtype (exact): accumulated in double, rounded once at the end.
  std::fill(r.v.begin(), r.v.end(), identity(n.op, x.type.dtype));
  std::vector<int64_t> idx(s.size(), 0);
  for (size_t i = 0; i < x.v.size(); ++i, next_index(idx, s)) {
    size_t o = static_cast<size_t>(out_index(idx, reduced, out.shape));
    r.v[o] = combine(n.op, r.v[o], x.v[i]);
  }
  for (double& v : r.v) v = round_to(out.dtype, v);
  return r;
}

}  // namespace fluxion::eval
