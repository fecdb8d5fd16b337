// Elementwise rules: unary, binary, comparison, select and convert, computed in double and
// rounded to the result dtype.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "fluxion/error.h"
#include "jit/eval/buffer.h"

namespace fluxion::interp {
namespace {

using ir::Op;

double sigmoid(double x) {
  // Two branches so that exp never overflows.
  if (x >= 0) return 1 / (1 + std::exp(-x));
  double e = std::exp(x);
  return e / (1 + e);
}

double unary(Op op, double x) {
  switch (op) {
    case Op::Neg: return -x;
    case Op::Abs: return std::abs(x);
    case Op::Sign: return x > 0 ? 1.0 : x < 0 ? -1.0 : x;  // keeps 0 and NaN
    case Op::Square: return x * x;
    case Op::Relu: return std::isnan(x) ? x : std::max(x, 0.0);  // max(x, 0): NaN propagates as in max
    case Op::Exp: return std::exp(x);
    case Op::Expm1: return std::expm1(x);
    case Op::Log: return std::log(x);
    case Op::Log1p: return std::log1p(x);
    case Op::Sqrt: return std::sqrt(x);
    case Op::Rsqrt: return 1 / std::sqrt(x);
    case Op::Sin: return std::sin(x);
    case Op::Cos: return std::cos(x);
    case Op::Tanh: return std::tanh(x);
    case Op::Sigmoid: return sigmoid(x);
    case Op::Softplus: return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
    case Op::Erf: return std::erf(x);
    case Op::Floor: return std::floor(x);
    case Op::Not: return x == 0 ? 1.0 : 0.0;
    case Op::StopGradient: return x;
    default: break;
  }
  detail::fail(ir::op_name(op), "not a unary op");
}

// i32 add, sub and mul wrap: computed exactly in 64-bit unsigned arithmetic, then narrowed
// (doubles would lose the low bits of a large product).
double wrapping_i32(Op op, double a, double b) {
  uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(a)), y = static_cast<uint64_t>(static_cast<int64_t>(b));
  uint64_t r = op == Op::Add ? x + y : op == Op::Sub ? x - y : x * y;
  return static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(r)));
}

double binary(Op op, DType t, double a, double b) {
  bool integer = t == DType::i32;
  if (integer && (op == Op::Add || op == Op::Sub || op == Op::Mul)) return wrapping_i32(op, a, b);
  switch (op) {
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div:
      // i32: truncation toward zero, and x / 0 = 0 so no input is undefined behaviour.
      if (integer) return b == 0 ? 0.0 : std::trunc(a / b);
      return a / b;
    case Op::Max: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
    case Op::Min: return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::min(a, b);
    case Op::Pow: return std::pow(a, b);
    case Op::Atan2: return std::atan2(a, b);
    case Op::And: return (a != 0 && b != 0) ? 1.0 : 0.0;
    case Op::Or: return (a != 0 || b != 0) ? 1.0 : 0.0;
    case Op::Eq: return a == b ? 1.0 : 0.0;
    case Op::Ne: return a != b ? 1.0 : 0.0;
    case Op::Lt: return a < b ? 1.0 : 0.0;
    case Op::Le: return a <= b ? 1.0 : 0.0;
    case Op::Gt: return a > b ? 1.0 : 0.0;
    case Op::Ge: return a >= b ? 1.0 : 0.0;
    default: break;
  }
  detail::fail(ir::op_name(op), "not a binary op");
}

// Float to i32 conversion: truncation toward zero, NaN to 0, saturation at the i32 range.
double to_i32(double x) {
  if (std::isnan(x)) return 0;
  return std::clamp(std::trunc(x), -2147483648.0, 2147483647.0);
}

}  // namespace

Buffer eval_elementwise(const ir::Node& n, const std::vector<Value>& in, const TensorType& out) {
  Buffer r = zeros(out);
  DType in_type = in.back()->type.dtype;
  for (size_t i = 0; i < r.v.size(); ++i) {
    double x;
    switch (ir::op_info(n.op).cls) {
      case ir::OpClass::Unary:
        // i32 square wraps like i32 mul (x*x can need more than the 53 bits of a double).
        x = n.op == Op::Square && in_type == DType::i32 ? wrapping_i32(Op::Mul, in[0]->v[i], in[0]->v[i])
                                                        : unary(n.op, in[0]->v[i]);
        break;
      case ir::OpClass::Select: x = in[0]->v[i] != 0 ? in[1]->v[i] : in[2]->v[i]; break;
      case ir::OpClass::Convert:
        x = out.dtype == DType::i32 && is_float(in_type) ? to_i32(in[0]->v[i]) : in[0]->v[i];
        break;
      default: x = binary(n.op, in_type, in[0]->v[i], in[1]->v[i]); break;
    }
    r.v[i] = round_to(out.dtype, x);
  }
  return r;
}

}  // namespace fluxion::interp
