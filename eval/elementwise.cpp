// Elementwise ops (unary, binary, compare, select, convert): the shared per-element lowering
// (kernel/elementwise_lowering.h) rendered on doubles, so that the reference states each
// op's math and edge cases in the same place as the backends. Every value is computed in
// double; the result is rounded to its dtype (round_to); i32 arithmetic wraps.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>

#include "eval/buffer.h"
#include "fluxion/error.h"
#include "kernel/elementwise_lowering.h"

namespace fluxion::eval {
namespace {

using kernel::Compare;

// i32 add, sub and mul wrap: computed exactly in 64-bit unsigned arithmetic, then narrowed
// (doubles would lose the low bits of a large product).
double wrap_i32(uint64_t r) { return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(r))); }
uint64_t bits(double x) { return static_cast<uint64_t>(static_cast<int64_t>(x)); }

// The Builder of kernel/lowering.h over doubles (the element primitives only: elementwise ops
// use no others).
struct DoubleBuilder {
  using V = double;
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  V constant(DType, double v) { return v; }
  V neg(V a, DType t) { return t == DType::i32 ? wrap_i32(0 - bits(a)) : -a; }
  V add(V a, V b, DType t) { return t == DType::i32 ? wrap_i32(bits(a) + bits(b)) : a + b; }
  V sub(V a, V b, DType t) { return t == DType::i32 ? wrap_i32(bits(a) - bits(b)) : a - b; }
  V mul(V a, V b, DType t) { return t == DType::i32 ? wrap_i32(bits(a) * bits(b)) : a * b; }
  V fdiv(V a, V b, DType) { return a / b; }
  V idiv(V a, V b) { return std::trunc(a / b); }
  V compare(Compare c, V a, V b, DType) {
    switch (c) {
      case Compare::Eq: return a == b;
      case Compare::Ne: return a != b;
      case Compare::Lt: return a < b;
      case Compare::Le: return a <= b;
      case Compare::Gt: return a > b;
      case Compare::Ge: return a >= b;
    }
    return 0;
  }
  V select(V c, V a, V b) { return c != 0 ? a : b; }
  V logic_and(V a, V b) { return a != 0 && b != 0; }
  V logic_or(V a, V b) { return a != 0 || b != 0; }
  V logic_not(V a) { return a == 0; }
  V is_nan(V a) { return std::isnan(a); }
  V abs(V a, DType) { return std::abs(a); }
  V max(V a, V b, DType) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }
  V min(V a, V b, DType) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); }
  V convert(V a, DType, DType to) { return to == DType::i32 ? std::trunc(a) : a; }
  V math(std::string_view f, DType, const std::vector<V>& x) {
    if (f == "exp") return std::exp(x[0]);
    if (f == "expm1") return std::expm1(x[0]);
    if (f == "log") return std::log(x[0]);
    if (f == "log1p") return std::log1p(x[0]);
    if (f == "sqrt") return std::sqrt(x[0]);
    if (f == "sin") return std::sin(x[0]);
    if (f == "cos") return std::cos(x[0]);
    if (f == "tanh") return std::tanh(x[0]);
    if (f == "erf") return std::erf(x[0]);
    if (f == "floor") return std::floor(x[0]);
    if (f == "pow") return std::pow(x[0], x[1]);
    if (f == "atan2") return std::atan2(x[0], x[1]);
    detail::fail(std::string(f), "internal error: the reference evaluator has no such math function");
  }
};

}  // namespace

Buffer eval_elementwise(const ir::Node& n, const std::vector<Value>& in, const TensorType& out) {
  Buffer r = zeros(out);
  DType in_type = in.back()->type.dtype;
  DoubleBuilder b;
  std::vector<double> x(in.size());
  for (size_t i = 0; i < r.v.size(); ++i) {
    for (size_t k = 0; k < in.size(); ++k) x[k] = in[k]->v[i];
    r.v[i] = round_to(out.dtype, kernel::lower_elementwise(b, n, x, in_type, out.dtype));
  }
  return r;
}

}  // namespace fluxion::eval
