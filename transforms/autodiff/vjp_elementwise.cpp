// Reverse rules of the elementwise ops: g is the adjoint of the result y, operands have y's
// shape. Each rule is the derivative written with ops that are themselves differentiable, so
// the adjoint program can be differentiated again.
#include <cmath>
#include <numbers>

#include "fluxion/error.h"
#include "transforms/autodiff/vjp_rules.h"

namespace fluxion::autodiff {

std::vector<ir::ValueId> vjp_elementwise(Builder& b, const ir::Node& n, ir::ValueId g, const std::vector<bool>& want) {
  using ir::Op;
  const std::vector<ir::ValueId>& x = n.operands;
  ir::ValueId y = n.results[0];
  std::vector<ir::ValueId> out(x.size(), -1);
  auto set = [&](size_t i, auto make) {
    if (want[i]) out[i] = make();
  };
  switch (n.op) {
    case Op::Neg: set(0, [&] { return b.neg(g); }); break;
    case Op::Abs: set(0, [&] { return b.mul(g, b.unary(Op::Sign, x[0])); }); break;
    case Op::Square: set(0, [&] { return b.mul(g, b.scale(x[0], 2)); }); break;
    case Op::Relu: set(0, [&] { return b.mask(b.binary(Op::Gt, x[0], b.splat_like(0, x[0])), g); }); break;
    case Op::Exp: set(0, [&] { return b.mul(g, y); }); break;
    case Op::Expm1: set(0, [&] { return b.mul(g, b.add(y, b.splat_like(1, y))); }); break;
    case Op::Log: set(0, [&] { return b.div(g, x[0]); }); break;
    case Op::Log1p: set(0, [&] { return b.div(g, b.add(x[0], b.splat_like(1, x[0]))); }); break;
    case Op::Sqrt: set(0, [&] { return b.div(b.scale(g, 0.5), y); }); break;
    // d/dx x^(-1/2) = -1/2 x^(-3/2) = -1/2 y / x
    case Op::Rsqrt: set(0, [&] { return b.mul(b.scale(g, -0.5), b.div(y, x[0])); }); break;
    case Op::Sin: set(0, [&] { return b.mul(g, b.unary(Op::Cos, x[0])); }); break;
    case Op::Cos: set(0, [&] { return b.neg(b.mul(g, b.unary(Op::Sin, x[0]))); }); break;
    case Op::Tanh: set(0, [&] { return b.mul(g, b.sub(b.splat_like(1, y), b.mul(y, y))); }); break;
    case Op::Sigmoid: set(0, [&] { return b.mul(g, b.mul(y, b.sub(b.splat_like(1, y), y))); }); break;
    case Op::Softplus: set(0, [&] { return b.mul(g, b.unary(Op::Sigmoid, x[0])); }); break;
    case Op::Erf:
      set(0, [&] {
        ir::ValueId e = b.unary(Op::Exp, b.neg(b.mul(x[0], x[0])));
        return b.mul(g, b.scale(e, 2 / std::sqrt(std::numbers::pi)));
      });
      break;
    case Op::Add:
      set(0, [&] { return g; });
      set(1, [&] { return g; });
      break;
    case Op::Sub:
      set(0, [&] { return g; });
      set(1, [&] { return b.neg(g); });
      break;
    case Op::Mul:
      set(0, [&] { return b.mul(g, x[1]); });
      set(1, [&] { return b.mul(g, x[0]); });
      break;
    case Op::Div:
      set(0, [&] { return b.div(g, x[1]); });
      set(1, [&] { return b.neg(b.div(b.mul(g, y), x[1])); });
      break;
    // Ties send the whole adjoint to the first operand.
    case Op::Max:
    case Op::Min: {
      ir::ValueId first = b.binary(n.op == Op::Max ? Op::Ge : Op::Le, x[0], x[1]);
      set(0, [&] { return b.mask(first, g); });
      set(1, [&] { return b.mask(b.unary(Op::Not, first), g); });
      break;
    }
    case Op::Pow:
      // d/da a^b = b a^(b-1); d/db a^b = a^b log a, taken as 0 where a == 0 (its limit from
      // above for b > 0) instead of 0 * -inf = NaN.
      set(0, [&] { return b.mul(g, b.mul(x[1], b.binary(Op::Pow, x[0], b.sub(x[1], b.splat_like(1, x[1]))))); });
      set(1, [&] {
        ir::ValueId zero = b.binary(Op::Eq, x[0], b.splat_like(0, x[0]));
        ir::ValueId safe = b.op(Op::Select, {zero, b.splat_like(1, x[0]), x[0]});
        return b.mask(b.unary(Op::Not, zero), b.mul(g, b.mul(y, b.unary(Op::Log, safe))));
      });
      break;
    case Op::Atan2: {
      // atan2(u, v): d/du = v / (u^2 + v^2), d/dv = -u / (u^2 + v^2)
      ir::ValueId r2 = b.add(b.mul(x[0], x[0]), b.mul(x[1], x[1]));
      ir::ValueId gr = b.div(g, r2);
      set(0, [&] { return b.mul(gr, x[1]); });
      set(1, [&] { return b.neg(b.mul(gr, x[0])); });
      break;
    }
    case Op::Select:
      set(1, [&] { return b.mask(x[0], g); });
      set(2, [&] { return b.mask(b.unary(Op::Not, x[0]), g); });
      break;
    case Op::Convert: set(0, [&] { return b.convert(g, b.type(x[0]).dtype); }); break;
    default: detail::fail(ir::op_name(n.op), "has no reverse rule");
  }
  return out;
}

}  // namespace fluxion::autodiff
