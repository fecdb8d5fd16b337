// Reverse rules of the collectives, after JAX's shard_map: a value is either invariant (the same
// bits on every rank: a result of an all-reduce, gather or broadcast, or computed from such
// values alone) or varying (each rank's own: a parameter, a rank index, a reduce-scatter's
// block, anything computed from one). The function being differentiated is the job's: an
// invariant result counts once, varying results are summed over ranks, a varying parameter is
// one variable per rank and an invariant value one variable shared by all. Adjoints of
// invariant values are invariant, which is what makes the rules below hold: where an invariant
// value is used by a computation with a varying result (an implicit broadcast to every rank),
// its adjoint contribution is summed over ranks (emit_vjp does it).
#include "fluxion/error.h"
#include "transforms/autodiff/vjp_rules.h"

namespace fluxion::autodiff {

using ir::Op;
using ir::ValueId;

std::vector<bool> invariant_values(const ir::Region& f) {
  std::vector<bool> invariant(f.types.size(), false);
  for (const ir::Node& n : f.nodes) {
    bool all = true;
    for (ValueId v : n.operands) all = all && invariant[static_cast<size_t>(v)];
    for (const ir::Region& sub : n.regions) all = all && !ir::has_collectives(sub);
    switch (n.op) {
      case Op::AllReduceSum:
      case Op::AllReduceMean:
      case Op::AllReduceMax:
      case Op::AllReduceMin:
      case Op::AllGather:
      case Op::BroadcastFrom: all = true; break;
      case Op::ReduceScatterSum:
      case Op::RankIndex: all = false; break;
      default: break;
    }
    for (ValueId r : n.results) invariant[static_cast<size_t>(r)] = all;
  }
  return invariant;
}

int64_t job_ranks(const ir::Region& f) {
  for (const ir::Node& n : f.nodes) {
    if (ir::is_collective(n.op)) return n.attrs.ranks;
    for (const ir::Region& sub : n.regions) {
      if (ir::has_collectives(sub)) return job_ranks(sub);
    }
  }
  return 1;
}

ValueId collective(Builder& b, Op op, ValueId v, int64_t ranks) {
  ir::Attrs a;
  a.ranks = ranks;
  return b.op(op, {v}, std::move(a));
}

namespace {

ValueId rank_index(Builder& b, int64_t ranks) {
  ir::Attrs a;
  a.ranks = ranks;
  return b.op(Op::RankIndex, {}, std::move(a));
}

// g of shape [ranks * d, ...] viewed as [ranks, d, ...].
ValueId split_blocks(Builder& b, ValueId g, int64_t ranks) {
  Shape s = b.shape(g);
  s[0] /= ranks;
  s.insert(s.begin(), ranks);
  return b.reshape(g, s);
}

}  // namespace

std::vector<ValueId> vjp_collective(Builder& b, const ir::Node& n, ValueId g, bool invariant) {
  if (n.operands.empty()) return {};
  int64_t ranks = n.attrs.ranks;
  ValueId x = n.operands[0], y = n.results[0];
  switch (n.op) {
    case Op::AllReduceSum: return {invariant ? b.scale(g, static_cast<double>(ranks)) : g};
    case Op::AllReduceMean: return {invariant ? g : b.scale(g, 1.0 / static_cast<double>(ranks))};
    case Op::AllReduceMax:
    case Op::AllReduceMin: {
      // The ranks holding the extreme share its adjoint, as reduce_max's rule shares it.
      if (invariant) return {g};
      ValueId hit = b.binary(Op::Eq, x, y);
      ValueId count = collective(b, Op::AllReduceSum, b.convert(hit, b.type(g).dtype), ranks);
      return {b.div(b.mask(hit, g), count)};
    }
    case Op::AllGather: {
      ValueId blocks = split_blocks(b, g, ranks);
      if (invariant) return {b.reduce_sum(blocks, {0})};
      ir::Attrs a;
      a.axes = {0};
      return {b.op(Op::Take, {blocks, rank_index(b, ranks)}, std::move(a))};
    }
    case Op::ReduceScatterSum: {
      ValueId all = collective(b, Op::AllGather, g, ranks);
      return {invariant ? b.scale(all, static_cast<double>(ranks)) : all};
    }
    case Op::BroadcastFrom: {
      if (invariant) return {g};
      ValueId root = b.splat(static_cast<double>(n.attrs.root), TensorType{DType::i32, {}});
      ValueId mine = b.broadcast(b.binary(Op::Eq, rank_index(b, ranks), root), b.shape(g));
      return {b.mask(mine, g)};
    }
    default: detail::fail(ir::op_name(n.op), "internal error: not a collective");
  }
}

}  // namespace fluxion::autodiff
