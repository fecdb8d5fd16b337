// Batching rules of the ops with regions. Loops carry the batch through their bodies: a carry
// is batched when its start is or when the body makes it so (found by iterating to a fixed
// point). A loop or branch whose predicate differs per example runs for all of them: a batched
// while runs until every example's condition is false, keeping a finished example's carries;
// a batched cond runs both branches and selects per example.
#include "transforms/batching/rules.h"

namespace fluxion::batching {
namespace {

using ir::Op;
using ir::ValueId;

std::vector<ValueId> ids_of(Builder& b, const std::vector<Batched>& ops, const std::vector<bool>& lifted,
                            int64_t size) {
  std::vector<ValueId> ids;
  for (size_t i = 0; i < ops.size(); ++i) ids.push_back(lifted[i] ? lift(b, ops[i], size) : ops[i].id);
  return ids;
}

// Marks the carries (the first `carries` entries of `in`, after `offset`) that body's results
// make batched; returns whether any changed.
bool widen_carries(const ir::Region& body, std::vector<bool>& in, size_t offset, size_t carries, int64_t size) {
  std::vector<bool> out = batched_results(body, in, size);
  bool changed = false;
  for (size_t j = 0; j < carries; ++j) {
    if (out[j] && !in[offset + j]) in[offset + j] = changed = true;
  }
  return changed;
}

// pred (bool[B]) broadcast over the examples' values of shape [B, ...].
ValueId per_example_mask(Builder& b, ValueId pred, const Shape& shape) {
  Shape s(shape.size(), 1);
  s[0] = shape[0];
  return b.broadcast(b.reshape(pred, s), shape);
}

std::vector<Batched> scan(Builder& b, const ir::Node& n, const std::vector<Batched>& ops, int64_t size) {
  size_t nc = static_cast<size_t>(n.attrs.carries), nx = static_cast<size_t>(n.attrs.xs);
  const ir::Region& body = n.regions[0];
  std::vector<bool> in(1 + ops.size(), false);  // the step index, then the operands
  for (size_t i = 0; i < ops.size(); ++i) in[1 + i] = ops[i].batched;
  while (widen_carries(body, in, 1, nc, size)) {
  }
  std::vector<bool> force(in.begin() + 1, in.begin() + 1 + static_cast<long>(nc)), out;
  std::vector<ir::Region> regions;
  regions.push_back(vmap(body, in, size, force, &out));
  std::vector<ValueId> operands;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (i < nc) operands.push_back(in[1 + i] ? lift(b, ops[i], size) : ops[i].id);
    // A batched per-step input is [B, length, ...]: the steps go first.
    else if (i < nc + nx && ops[i].batched) operands.push_back(move_axis(b, ops[i].id, 0, 1));
    else operands.push_back(ops[i].id);
  }
  std::vector<ValueId> res = b.region().add(Op::Scan, operands, n.attrs, {}, std::move(regions));
  std::vector<Batched> results;
  for (size_t j = 0; j < res.size(); ++j) {
    if (j < nc || !out[j]) results.push_back({res[j], out[j]});
    else results.push_back({move_axis(b, res[j], 1, 0), true});  // stacked [length, B, ...]
  }
  return results;
}

std::vector<Batched> while_loop(Builder& b, const ir::Node& n, const std::vector<Batched>& ops, int64_t size) {
  size_t nc = static_cast<size_t>(n.attrs.carries);
  const ir::Region &cond = n.regions[0], &body = n.regions[1];
  std::vector<bool> in;
  for (const Batched& o : ops) in.push_back(o.batched);
  bool per_example = false;
  do {
    per_example = batched_results(cond, in, size)[0];
  } while (!per_example && widen_carries(body, in, 0, nc, size));
  if (per_example) std::fill(in.begin(), in.begin() + static_cast<long>(nc), true);
  std::vector<ValueId> operands = ids_of(b, ops, in, size);
  std::vector<ir::Region> regions;
  if (!per_example) {
    regions.push_back(vmap(cond, in, size));
    regions.push_back(vmap(body, in, size, std::vector<bool>(in.begin(), in.begin() + static_cast<long>(nc))));
  } else {
    // The loop goes on while any example's condition holds; an example whose condition is
    // false keeps its carries.
    for (int part = 0; part < 2; ++part) {
      ir::Region r;
      std::vector<Batched> args;
      for (size_t i = 0; i < ops.size(); ++i) args.push_back({r.add_param(b.type(operands[i])), in[i]});
      Builder rb(r);
      ValueId pred = lift(rb, emit_vmap(r, cond, args, size)[0], size);
      if (part == 0) {
        ir::Attrs a;
        a.axes = {0};
        ValueId any = rb.op(Op::ReduceMax, {rb.convert(pred, DType::i32)}, a);
        r.results = {rb.op(Op::Gt, {any, rb.splat(0, rb.type(any))})};
      } else {
        std::vector<Batched> next = emit_vmap(r, body, args, size);
        for (size_t j = 0; j < nc; ++j) {
          ValueId v = lift(rb, next[j], size);
          r.results.push_back(rb.op(Op::Select, {per_example_mask(rb, pred, rb.shape(v)), v, args[j].id}));
        }
      }
      regions.push_back(std::move(r));
    }
  }
  std::vector<ValueId> res = b.region().add(Op::While, operands, n.attrs, {}, std::move(regions));
  std::vector<Batched> results;
  for (size_t j = 0; j < res.size(); ++j) results.push_back({res[j], in[j]});
  return results;
}

std::vector<Batched> cond(Builder& b, const ir::Node& n, const std::vector<Batched>& ops, int64_t size) {
  std::vector<Batched> args(ops.begin() + 1, ops.end());
  if (ops[0].batched) {
    // Both branches run; each example takes its branch's values.
    std::vector<Batched> yes = emit_vmap(b.region(), n.regions[0], args, size);
    std::vector<Batched> no = emit_vmap(b.region(), n.regions[1], args, size);
    std::vector<Batched> results;
    for (size_t j = 0; j < yes.size(); ++j) {
      ValueId y = lift(b, yes[j], size), x = lift(b, no[j], size);
      results.push_back({b.op(Op::Select, {per_example_mask(b, ops[0].id, b.shape(y)), y, x}), true});
    }
    return results;
  }
  std::vector<bool> in;
  for (const Batched& a : args) in.push_back(a.batched);
  std::vector<bool> force = batched_results(n.regions[0], in, size);
  std::vector<bool> other = batched_results(n.regions[1], in, size);
  for (size_t j = 0; j < force.size(); ++j) force[j] = force[j] || other[j];
  std::vector<ir::Region> regions;
  for (const ir::Region& r : n.regions) regions.push_back(vmap(r, in, size, force));
  std::vector<ValueId> operands = {ops[0].id};
  for (const Batched& a : args) operands.push_back(a.id);
  std::vector<ValueId> res = b.region().add(Op::Cond, operands, n.attrs, {}, std::move(regions));
  std::vector<Batched> results;
  for (size_t j = 0; j < res.size(); ++j) results.push_back({res[j], force[j]});
  return results;
}

// custom_vjp and custom_jvp: the arguments and results all carry the batch (the user's rule
// then sees per-example adjoints or tangents), the captures as they come.
std::vector<Batched> custom_rule(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                                 const std::vector<Batched>& ops, int64_t size) {
  size_t na = static_cast<size_t>(n.attrs.carries), nr = types.size();
  std::vector<bool> captures;
  for (size_t i = na; i < ops.size(); ++i) captures.push_back(ops[i].batched);
  auto params = [&](size_t batched) {
    std::vector<bool> in(batched, true);
    in.insert(in.end(), captures.begin(), captures.end());
    return in;
  };
  // backward(A..., R..., adjoints of R..., K...) -> A adjoints; tangent(A..., dA..., K...) -> dR.
  size_t rule_args = n.op == Op::CustomVjp ? na + 2 * nr : 2 * na;
  size_t rule_results = n.op == Op::CustomVjp ? na : nr;
  std::vector<ir::Region> regions;
  regions.push_back(vmap(n.regions[0], params(na), size, std::vector<bool>(nr, true)));
  regions.push_back(vmap(n.regions[1], params(rule_args), size, std::vector<bool>(rule_results, true)));
  std::vector<bool> lifted(na, true);
  lifted.insert(lifted.end(), captures.size(), false);
  std::vector<Batched> results;
  for (ValueId r : b.region().add(n.op, ids_of(b, ops, lifted, size), n.attrs, {}, std::move(regions))) {
    results.push_back({r, true});
  }
  return results;
}

}  // namespace

std::vector<Batched> batch_control(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                                   const std::vector<Batched>& ops, int64_t size) {
  switch (n.op) {
    case Op::Scan: return scan(b, n, ops, size);
    case Op::While: return while_loop(b, n, ops, size);
    case Op::Cond: return cond(b, n, ops, size);
    default: return custom_rule(b, n, types, ops, size);
  }
}

}  // namespace fluxion::batching
