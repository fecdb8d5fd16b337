// Elementwise ops, their operators, where and cast. Binary ops broadcast their operands here
// so that the IR's elementwise ops always see equal types.
#include <string>

#include "dsl/trace.h"
#include "fluxion/error.h"
#include "fluxion/ops.h"

namespace fluxion {
namespace {

using detail::emit1;
using ir::Op;

Tensor unary(Op op, const Tensor& x, const Loc& loc) { return emit1(op, {x}, loc); }

void require_same_dtype(Op op, const Tensor& a, const Tensor& b, const Loc& loc) {
  detail::require_valid(a, ir::op_name(op), loc);
  detail::require_valid(b, ir::op_name(op), loc);
  if (a.dtype() != b.dtype()) {
    detail::fail(ir::op_name(op), "operands " + a.type().str() + " and " + b.type().str() +
                                      " have different dtypes (expected equal dtypes; cast one first)",
                 &loc);
  }
}

Tensor binary(Op op, const Tensor& a, const Tensor& b, const Loc& loc) {
  require_same_dtype(op, a, b, loc);
  Shape s = detail::broadcast_shapes(a.type(), b.type(), ir::op_name(op), loc);
  return emit1(op, {detail::broadcast_as(a, s, loc), detail::broadcast_as(b, s, loc)}, loc);
}

Tensor with_scalar(Op op, const Tensor& a, double s, bool scalar_first, const Loc& loc) {
  detail::require_valid(a, ir::op_name(op), loc);
  Tensor c = detail::broadcast_as(detail::scalar_like(s, a.type(), ir::op_name(op), loc), a.shape(), loc);
  return scalar_first ? emit1(op, {c, a}, loc) : emit1(op, {a, c}, loc);
}

}  // namespace

#define FLUXION_UNARY(fn, op) \
  Tensor fn(const Tensor& x, Loc loc) { return unary(Op::op, x, loc); }
FLUXION_UNARY(neg, Neg)
FLUXION_UNARY(abs, Abs)
FLUXION_UNARY(sign, Sign)
FLUXION_UNARY(square, Square)
FLUXION_UNARY(relu, Relu)
FLUXION_UNARY(exp, Exp)
FLUXION_UNARY(expm1, Expm1)
FLUXION_UNARY(log, Log)
FLUXION_UNARY(log1p, Log1p)
FLUXION_UNARY(sqrt, Sqrt)
FLUXION_UNARY(rsqrt, Rsqrt)
FLUXION_UNARY(sin, Sin)
FLUXION_UNARY(cos, Cos)
FLUXION_UNARY(tanh, Tanh)
FLUXION_UNARY(sigmoid, Sigmoid)
FLUXION_UNARY(softplus, Softplus)
FLUXION_UNARY(erf, Erf)
FLUXION_UNARY(floor, Floor)
FLUXION_UNARY(logical_not, Not)
FLUXION_UNARY(stop_gradient, StopGradient)
#undef FLUXION_UNARY

#define FLUXION_BINARY(fn, op) \
  Tensor fn(const Tensor& a, const Tensor& b, Loc loc) { return binary(Op::op, a, b, loc); }
FLUXION_BINARY(add, Add)
FLUXION_BINARY(sub, Sub)
FLUXION_BINARY(mul, Mul)
FLUXION_BINARY(div, Div)
FLUXION_BINARY(pow, Pow)
FLUXION_BINARY(maximum, Max)
FLUXION_BINARY(minimum, Min)
FLUXION_BINARY(atan2, Atan2)
FLUXION_BINARY(logical_and, And)
FLUXION_BINARY(logical_or, Or)
FLUXION_BINARY(eq, Eq)
FLUXION_BINARY(ne, Ne)
FLUXION_BINARY(lt, Lt)
FLUXION_BINARY(le, Le)
FLUXION_BINARY(gt, Gt)
FLUXION_BINARY(ge, Ge)
#undef FLUXION_BINARY

Tensor pow(const Tensor& a, double b, Loc loc) { return with_scalar(Op::Pow, a, b, false, loc); }
Tensor pow(double a, const Tensor& b, Loc loc) { return with_scalar(Op::Pow, b, a, true, loc); }
Tensor maximum(const Tensor& a, double b, Loc loc) { return with_scalar(Op::Max, a, b, false, loc); }
Tensor minimum(const Tensor& a, double b, Loc loc) { return with_scalar(Op::Min, a, b, false, loc); }
Tensor atan2(const Tensor& y, double x, Loc loc) { return with_scalar(Op::Atan2, y, x, false, loc); }

#define FLUXION_OPERATOR(sym, op)                                                                    \
  Tensor operator sym(detail::At a, const Tensor& b) { return binary(Op::op, a.t, b, a.loc); }       \
  Tensor operator sym(detail::At a, double b) { return with_scalar(Op::op, a.t, b, false, a.loc); }
FLUXION_OPERATOR(+, Add)
FLUXION_OPERATOR(-, Sub)
FLUXION_OPERATOR(*, Mul)
FLUXION_OPERATOR(/, Div)
FLUXION_OPERATOR(==, Eq)
FLUXION_OPERATOR(!=, Ne)
FLUXION_OPERATOR(<, Lt)
FLUXION_OPERATOR(<=, Le)
FLUXION_OPERATOR(>, Gt)
FLUXION_OPERATOR(>=, Ge)
#undef FLUXION_OPERATOR

Tensor operator+(double a, detail::At b) { return with_scalar(Op::Add, b.t, a, true, b.loc); }
Tensor operator-(double a, detail::At b) { return with_scalar(Op::Sub, b.t, a, true, b.loc); }
Tensor operator*(double a, detail::At b) { return with_scalar(Op::Mul, b.t, a, true, b.loc); }
Tensor operator/(double a, detail::At b) { return with_scalar(Op::Div, b.t, a, true, b.loc); }
Tensor operator-(detail::At a) { return unary(Op::Neg, a.t, a.loc); }
Tensor operator&(detail::At a, const Tensor& b) { return binary(Op::And, a.t, b, a.loc); }
Tensor operator|(detail::At a, const Tensor& b) { return binary(Op::Or, a.t, b, a.loc); }
Tensor operator!(detail::At a) { return unary(Op::Not, a.t, a.loc); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b, Loc loc) {
  require_same_dtype(Op::Select, a, b, loc);
  if (!cond.valid() || cond.dtype() != DType::boolean) {
    detail::fail("select", "condition " + cond.type().str() + " must be a bool Tensor", &loc);
  }
  Shape s = detail::broadcast_shapes(a.type(), b.type(), "select", loc);
  s = detail::broadcast_shapes(cond.type(), TensorType{a.dtype(), s}, "select", loc);
  return emit1(Op::Select,
               {detail::broadcast_as(cond, s, loc), detail::broadcast_as(a, s, loc), detail::broadcast_as(b, s, loc)},
               loc);
}

Tensor where(const Tensor& cond, const Tensor& a, double b, Loc loc) {
  detail::require_valid(a, "select", loc);
  return where(cond, a, detail::scalar_like(b, a.type(), "select", loc), loc);
}

Tensor where(const Tensor& cond, double a, const Tensor& b, Loc loc) {
  detail::require_valid(b, "select", loc);
  return where(cond, detail::scalar_like(a, b.type(), "select", loc), b, loc);
}

Tensor cast(const Tensor& x, DType dtype, Loc loc) {
  if (x.valid() && x.dtype() == dtype) return x;
  return emit1(Op::Convert, {x}, loc, {}, {TensorType{dtype, x.shape()}});
}

}  // namespace fluxion
