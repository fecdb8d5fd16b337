// Forward mode: tangents propagated alongside the primal values, op by op. Elementwise
// Jacobians are diagonal, so an elementwise op's tangent rule is its reverse rule applied to the
// operand tangents and summed; linear ops apply themselves to the tangents; bilinear ones use
// the product rule; loops and branches carry tangents through new loops and branches.
#include <string>

#include "fluxion/error.h"
#include "transforms/autodiff/autodiff.h"
#include "transforms/autodiff/vjp_rules.h"

namespace fluxion::autodiff {
namespace {

using ir::Op;
using ir::ValueId;

ValueId sum_present(Builder& b, const std::vector<ValueId>& vs) {
  std::vector<ValueId> present;
  for (ValueId v : vs) {
    if (v >= 0) present.push_back(v);
  }
  return present.empty() ? -1 : b.sum_all(present);
}

// The same op, with operand `i` replaced by its tangent (for ops linear in that operand).
ValueId apply_to(Builder& b, const ir::Node& n, size_t i, ValueId t) {
  std::vector<ValueId> operands = n.operands;
  operands[i] = t;
  std::vector<TensorType> declared;
  for (ValueId r : n.results) declared.push_back(b.type(r));
  return b.region().add(n.op, operands, n.attrs, declared)[0];
}

std::vector<ValueId> jvp_control(Builder& b, const ir::Node& n, const std::vector<ValueId>& t);

// Tangents of n's results from its operands' tangents t (-1: zero).
std::vector<ValueId> jvp_node(Builder& b, const ir::Node& n, const std::vector<ValueId>& t) {
  if (ir::has_regions(n.op)) return jvp_control(b, n, t);
  if (!ir::is_differentiable(n.op) || !is_float(b.type(n.results[0]).dtype)) return {-1};
  switch (ir::op_info(n.op).cls) {
    case ir::OpClass::Unary:
    case ir::OpClass::Binary:
    case ir::OpClass::Select:
    case ir::OpClass::Convert: {
      std::vector<ValueId> parts;
      for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] < 0) continue;
        std::vector<bool> want(t.size(), false);
        want[i] = true;
        parts.push_back(vjp_elementwise(b, n, t[i], want)[i]);
      }
      return {sum_present(b, parts)};
    }
    default: break;
  }
  switch (n.op) {
    case Op::ReduceMax:
    case Op::ReduceMin: {
      // The mean of the tangent over the tied extremes, as the reverse rule shares adjoints.
      const std::vector<int64_t>& axes = n.attrs.axes;
      Shape s = b.shape(n.operands[0]);
      ValueId hit = b.binary(Op::Eq, n.operands[0], b.expand_reduced(n.results[0], axes, s));
      ValueId count = b.reduce_sum(b.convert(hit, b.type(t[0]).dtype), axes);
      return {b.div(b.reduce_sum(b.mask(hit, t[0]), axes), count)};
    }
    case Op::AllReduceMax:
    case Op::AllReduceMin: {
      // The mean of the tangent over the ranks holding the extreme, as the reverse rule shares.
      ValueId hit = b.binary(Op::Eq, n.operands[0], n.results[0]);
      int64_t ranks = n.attrs.ranks;
      ValueId count = collective(b, Op::AllReduceSum, b.convert(hit, b.type(t[0]).dtype), ranks);
      return {b.div(collective(b, Op::AllReduceSum, b.mask(hit, t[0]), ranks), count)};
    }
    case Op::MatMul:
    case Op::Conv2d:
    case Op::Conv2dInputGrad:
    case Op::Conv2dWeightGrad:  // bilinear: the product rule
      return {sum_present(b, {t[0] >= 0 ? apply_to(b, n, 0, t[0]) : -1, t[1] >= 0 ? apply_to(b, n, 1, t[1]) : -1})};
    case Op::MaxPool2dGrad:
    case Op::MaxPool2dSelect:  // linear in their second operand; piecewise constant in x
      return {t[1] >= 0 ? apply_to(b, n, 1, t[1]) : -1};
    case Op::MaxPool2d: return {b.op(Op::MaxPool2dSelect, {n.operands[0], t[0]}, n.attrs)};
    case Op::Concat: {
      std::vector<ValueId> parts = n.operands;
      for (size_t i = 0; i < parts.size(); ++i) parts[i] = t[i] >= 0 ? t[i] : b.splat_like(0, parts[i]);
      return {b.op(Op::Concat, parts, n.attrs)};
    }
    case Op::ReduceSum:
    case Op::AvgPool2d:
    case Op::AvgPool2dGrad:
    case Op::Reshape:
    case Op::Transpose:
    case Op::Broadcast:
    case Op::Slice:
    case Op::Pad:
    case Op::Gather:
    case Op::Take:
    case Op::ScatterAdd:
    case Op::AllReduceSum:
    case Op::AllReduceMean:
    case Op::AllGather:
    case Op::ReduceScatterSum:
    case Op::BroadcastFrom:  // linear in operand 0 (the others are indices): the op applied to its tangent
      return {t[0] >= 0 ? apply_to(b, n, 0, t[0]) : -1};
    default:
      // A differentiable op without a rule must not get a plausible but wrong tangent.
      detail::fail(ir::op_name(n.op), "forward-mode differentiation (jvp) has no rule for this op");
  }
}

// The tangent of a float value that has none: zeros.
ValueId or_zero(Builder& b, ValueId t, ValueId like) { return t >= 0 ? t : b.splat_like(0, like); }

// scan: carries [C, dC], xs [X, dX], captures [K, dK]; the body's tangent is computed after its
// primal in the same body. dC has one entry per float carry (zeros when it starts without one).
std::vector<ValueId> jvp_scan(Builder& b, const ir::Node& n, const std::vector<ValueId>& t) {
  size_t nc = static_cast<size_t>(n.attrs.carries), nx = static_cast<size_t>(n.attrs.xs);
  size_t nk = n.operands.size() - nc - nx;
  const ir::Region& old = n.regions[0];
  auto group = [&](size_t lo, size_t count, bool all_float) {
    std::vector<size_t> g;
    for (size_t i = lo; i < lo + count; ++i) {
      if (t[i] >= 0 || (all_float && is_float(b.type(n.operands[i]).dtype))) g.push_back(i);
    }
    return g;
  };
  std::vector<size_t> tc = group(0, nc, true), tx = group(nc, nx, false), tk = group(nc + nx, nk, false);

  ir::Region nr;
  std::vector<ValueId> args(old.params.size()), targs(old.params.size(), -1);
  args[0] = nr.add_param(old.type(old.params[0]));
  auto add_group = [&](size_t lo, size_t count, const std::vector<size_t>& tg) {
    for (size_t i = lo; i < lo + count; ++i) args[1 + i] = nr.add_param(old.type(old.params[1 + i]));
    for (size_t i : tg) targs[1 + i] = nr.add_param(old.type(old.params[1 + i]));
  };
  add_group(0, nc, tc);
  add_group(nc, nx, tx);
  add_group(nc + nx, nk, tk);
  std::vector<ValueId> outs;
  std::vector<ValueId> touts = emit_jvp(nr, old, args, targs, &outs);
  Builder nb(nr);
  size_t ny = outs.size() - nc;
  std::vector<size_t> ty;
  for (size_t y = 0; y < ny; ++y) {
    if (is_float(nr.type(outs[nc + y]).dtype)) ty.push_back(y);
  }
  for (size_t j = 0; j < nc; ++j) nr.results.push_back(outs[j]);
  for (size_t j : tc) nr.results.push_back(or_zero(nb, touts[j], outs[j]));
  for (size_t y = 0; y < ny; ++y) nr.results.push_back(outs[nc + y]);
  for (size_t y : ty) nr.results.push_back(or_zero(nb, touts[nc + y], outs[nc + y]));

  std::vector<ValueId> ops;
  auto push_group = [&](size_t lo, size_t count, const std::vector<size_t>& tg) {
    for (size_t i = lo; i < lo + count; ++i) ops.push_back(n.operands[i]);
    for (size_t i : tg) ops.push_back(or_zero(b, t[i], n.operands[i]));
  };
  push_group(0, nc, tc);
  push_group(nc, nx, tx);
  push_group(nc + nx, nk, tk);
  ir::Attrs a = n.attrs;
  a.carries = static_cast<int64_t>(nc + tc.size());
  a.xs = static_cast<int64_t>(nx + tx.size());
  std::vector<ir::Region> regions;
  regions.push_back(std::move(nr));
  std::vector<ValueId> res = b.region().add(Op::Scan, ops, a, {}, std::move(regions));
  std::vector<ValueId> out(n.results.size(), -1);
  for (size_t q = 0; q < tc.size(); ++q) out[tc[q]] = res[nc + q];
  size_t ys_at = nc + tc.size();
  for (size_t q = 0; q < ty.size(); ++q) out[nc + ty[q]] = res[ys_at + ny + q];
  return out;
}

// while: carries [C, dC], captures [K, dK]; the condition reads only the primal values.
std::vector<ValueId> jvp_while(Builder& b, const ir::Node& n, const std::vector<ValueId>& t) {
  size_t nc = static_cast<size_t>(n.attrs.carries), nk = n.operands.size() - nc;
  std::vector<size_t> tc, tk;
  for (size_t i = 0; i < nc; ++i) {
    if (is_float(b.type(n.operands[i]).dtype)) tc.push_back(i);
  }
  for (size_t i = nc; i < nc + nk; ++i) {
    if (t[i] >= 0) tk.push_back(i);
  }
  std::vector<ir::Region> regions;
  for (size_t ri = 0; ri < 2; ++ri) {
    const ir::Region& old = n.regions[ri];
    ir::Region nr;
    std::vector<ValueId> args(old.params.size()), targs(old.params.size(), -1);
    for (size_t i = 0; i < nc; ++i) args[i] = nr.add_param(old.type(old.params[i]));
    for (size_t i : tc) targs[i] = nr.add_param(old.type(old.params[i]));
    for (size_t i = nc; i < nc + nk; ++i) args[i] = nr.add_param(old.type(old.params[i]));
    for (size_t i : tk) targs[i] = nr.add_param(old.type(old.params[i]));
    if (ri == 0) {
      nr.results = ir::inline_region(nr, old, args);
    } else {
      std::vector<ValueId> outs;
      std::vector<ValueId> touts = emit_jvp(nr, old, args, targs, &outs);
      Builder nb(nr);
      nr.results = outs;
      for (size_t j : tc) nr.results.push_back(or_zero(nb, touts[j], outs[j]));
    }
    regions.push_back(std::move(nr));
  }
  std::vector<ValueId> ops(n.operands.begin(), n.operands.begin() + static_cast<long>(nc));
  for (size_t i : tc) ops.push_back(or_zero(b, t[i], n.operands[i]));
  ops.insert(ops.end(), n.operands.begin() + static_cast<long>(nc), n.operands.end());
  for (size_t i : tk) ops.push_back(t[i]);
  ir::Attrs a = n.attrs;
  a.carries = static_cast<int64_t>(nc + tc.size());
  std::vector<ValueId> res = b.region().add(Op::While, ops, a, {}, std::move(regions));
  std::vector<ValueId> out(n.results.size(), -1);
  for (size_t q = 0; q < tc.size(); ++q) out[tc[q]] = res[nc + q];
  return out;
}

// cond: [pred, args..., tangents of the args that have one]; each branch returns its results
// and the tangents of its float results.
std::vector<ValueId> jvp_cond(Builder& b, const ir::Node& n, const std::vector<ValueId>& t) {
  size_t na = n.operands.size() - 1;
  std::vector<size_t> ta, fr;
  for (size_t i = 0; i < na; ++i) {
    if (t[1 + i] >= 0) ta.push_back(i);
  }
  std::vector<ir::Region> regions;
  for (const ir::Region& old : n.regions) {
    ir::Region nr;
    std::vector<ValueId> args, targs(na, -1);
    for (size_t i = 0; i < na; ++i) args.push_back(nr.add_param(old.type(old.params[i])));
    for (size_t i : ta) targs[i] = nr.add_param(old.type(old.params[i]));
    std::vector<ValueId> outs;
    std::vector<ValueId> touts = emit_jvp(nr, old, args, targs, &outs);
    Builder nb(nr);
    nr.results = outs;
    fr.clear();
    for (size_t r = 0; r < outs.size(); ++r) {
      if (!is_float(nr.type(outs[r]).dtype)) continue;
      fr.push_back(r);
      nr.results.push_back(or_zero(nb, touts[r], outs[r]));
    }
    regions.push_back(std::move(nr));
  }
  std::vector<ValueId> ops = n.operands;
  for (size_t i : ta) ops.push_back(t[1 + i]);
  std::vector<ValueId> res = b.region().add(Op::Cond, ops, {}, {}, std::move(regions));
  std::vector<ValueId> out(n.results.size(), -1);
  for (size_t q = 0; q < fr.size(); ++q) out[fr[q]] = res[n.results.size() + q];
  return out;
}

std::vector<ValueId> jvp_control(Builder& b, const ir::Node& n, const std::vector<ValueId>& t) {
  switch (n.op) {
    case Op::Scan: return jvp_scan(b, n, t);
    case Op::While: return jvp_while(b, n, t);
    // Forward mode has no use for a reverse rule: it differentiates the primal.
    case Op::CustomVjp: return emit_jvp(b.region(), n.regions[0], n.operands, t, nullptr);
    case Op::CustomJvp: {  // the user's tangent rule, on zero tangents where there are none
      size_t na = static_cast<size_t>(n.attrs.carries);
      std::vector<ValueId> args(n.operands.begin(), n.operands.begin() + static_cast<long>(na));
      for (size_t i = 0; i < na; ++i) args.push_back(or_zero(b, t[i], n.operands[i]));
      args.insert(args.end(), n.operands.begin() + static_cast<long>(na), n.operands.end());
      return ir::inline_region(b.region(), n.regions[1], args);
    }
    default: return jvp_cond(b, n, t);
  }
}

}  // namespace

std::vector<ValueId> emit_jvp(ir::Region& target, const ir::Region& f, const std::vector<ValueId>& args,
                              const std::vector<ValueId>& tangents, std::vector<ValueId>* outputs) {
  std::vector<size_t> node_index;
  std::vector<ValueId> results = ir::inline_region(target, f, args, &node_index);
  if (outputs) *outputs = results;
  Builder b(target);
  std::vector<ValueId> tan(f.types.size(), -1);
  for (size_t i = 0; i < f.params.size(); ++i) tan[static_cast<size_t>(f.params[i])] = tangents[i];
  for (size_t k = 0; k < f.nodes.size(); ++k) {
    const ir::Node& fn = f.nodes[k];
    std::vector<ValueId> t;
    bool any = false;
    for (ValueId v : fn.operands) {
      t.push_back(tan[static_cast<size_t>(v)]);
      any = any || t.back() >= 0;
    }
    if (!any) continue;
    ir::Node n = target.nodes[node_index[k]];  // a copy: rules append to target.nodes
    size_t first = target.nodes.size();
    std::vector<ValueId> rt = jvp_node(b, n, t);
    // The primal copy above printed; a rule's recomputation does not (a custom_jvp's tangent
    // region is the user's, and prints what it says).
    if (n.op != Op::CustomJvp && ir::has_effects(n)) ir::remove_effects(target, first);
    for (size_t j = 0; j < rt.size() && j < fn.results.size(); ++j) tan[static_cast<size_t>(fn.results[j])] = rt[j];
  }
  std::vector<ValueId> out;
  for (ValueId v : f.results) out.push_back(tan[static_cast<size_t>(v)]);
  return out;
}

}  // namespace fluxion::autodiff
