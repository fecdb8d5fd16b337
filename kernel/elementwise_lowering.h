// What every elementwise op computes per element, written once for every backend. The rules
// that make a backend agree with the reference evaluator (eval/elementwise.cpp) live here:
// integer division by zero is 0 and INT_MIN / -1 wraps, max and min propagate NaN, float to
// int conversion saturates and takes NaN to 0, sign keeps NaN and signed zeros, sigmoid and
// softplus never overflow. The Builder's primitives are listed in lowering.h.
#pragma once

#include <limits>
#include <string_view>
#include <vector>

#include "fluxion/dtype.h"
#include "fluxion/error.h"
#include "ir/ir.h"
#include "kernel/lowering.h"

namespace fluxion::kernel {

template <class Builder, class V>
V lower_elementwise(Builder& b, const ir::Node& n, const std::vector<V>& x, DType in, DType out) {
  using ir::Op;
  bool fp = is_float(in);
  auto k = [&](double v) { return b.constant(in, v); };
  auto cmp = [&](Compare c, V l, V r) { return b.compare(c, l, r, in); };
  switch (n.op) {
    case Op::Neg: return b.neg(x[0], in);
    case Op::Abs: return b.abs(x[0], in);
    case Op::Sign:
      // NaN and both zeros are their own sign.
      return b.select(cmp(Compare::Gt, x[0], k(0)), k(1),
                      b.select(cmp(Compare::Lt, x[0], k(0)), k(-1), fp ? x[0] : k(0)));
    case Op::Square: return b.mul(x[0], x[0], in);
    case Op::Relu: return b.max(x[0], k(0), in);
    case Op::Exp:
    case Op::Expm1:
    case Op::Log:
    case Op::Log1p:
    case Op::Sqrt:
    case Op::Sin:
    case Op::Cos:
    case Op::Tanh:
    case Op::Erf:
    case Op::Floor:
    case Op::Pow:
    case Op::Atan2: return b.math(ir::op_info(n.op).math, in, x);
    case Op::Rsqrt: return b.fdiv(k(1), b.math("sqrt", in, {x[0]}), in);
    case Op::Sigmoid: {
      // e = exp(-|x|) never overflows; sigmoid is 1/(1+e) for x >= 0 and e/(1+e) below.
      V e = b.math("exp", in, {b.neg(b.abs(x[0], in), in)});
      V r = b.fdiv(k(1), b.add(k(1), e, in), in);
      return b.select(cmp(Compare::Ge, x[0], k(0)), r, b.mul(e, r, in));
    }
    case Op::Softplus: {
      // max(x, 0) + log1p(exp(-|x|)): no overflow for large |x|.
      V e = b.math("exp", in, {b.neg(b.abs(x[0], in), in)});
      return b.add(b.max(x[0], k(0), in), b.math("log1p", in, {e}), in);
    }
    case Op::Not: return b.logic_not(x[0]);
    case Op::StopGradient: return x[0];
    case Op::Add: return b.add(x[0], x[1], in);
    case Op::Sub: return b.sub(x[0], x[1], in);
    case Op::Mul: return b.mul(x[0], x[1], in);
    case Op::Div: {
      if (fp) return b.fdiv(x[0], x[1], in);
      V by_zero = cmp(Compare::Eq, x[1], k(0)), by_minus_one = cmp(Compare::Eq, x[1], k(-1));
      V q = b.idiv(x[0], b.select(b.logic_or(by_zero, by_minus_one), k(1), x[1]));
      return b.select(by_zero, k(0), b.select(by_minus_one, b.neg(x[0], in), q));
    }
    case Op::Max: return b.max(x[0], x[1], in);
    case Op::Min: return b.min(x[0], x[1], in);
    case Op::And: return b.logic_and(x[0], x[1]);
    case Op::Or: return b.logic_or(x[0], x[1]);
    case Op::Eq: return cmp(Compare::Eq, x[0], x[1]);
    case Op::Ne: return cmp(Compare::Ne, x[0], x[1]);
    case Op::Lt: return cmp(Compare::Lt, x[0], x[1]);
    case Op::Le: return cmp(Compare::Le, x[0], x[1]);
    case Op::Gt: return cmp(Compare::Gt, x[0], x[1]);
    case Op::Ge: return cmp(Compare::Ge, x[0], x[1]);
    case Op::Select: return b.select(x[0], x[1], x[2]);
    case Op::Convert: {
      if (in == out) return x[0];
      if (out == DType::boolean) return cmp(Compare::Ne, x[0], k(0));
      if (in == DType::boolean) return b.select(x[0], b.constant(out, 1), b.constant(out, 0));
      if (!fp || is_float(out)) return b.convert(x[0], in, out);
      // Float to i32 saturates, and NaN becomes 0.
      double lo = std::numeric_limits<int32_t>::min(), hi = -lo;
      V converted = b.convert(
          b.select(b.logic_or(b.is_nan(x[0]), cmp(Compare::Ge, x[0], k(hi))), k(0), b.max(x[0], k(lo), in)), in, out);
      return b.select(b.is_nan(x[0]), b.constant(out, 0),
                      b.select(cmp(Compare::Ge, x[0], k(hi)), b.constant(out, hi - 1), converted));
    }
    default: break;
  }
  detail::fail(ir::op_name(n.op), "internal error: not an elementwise op");
}

}  // namespace fluxion::kernel
