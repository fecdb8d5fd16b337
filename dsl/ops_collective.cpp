// Collectives inside traced functions (fluxion/ops.h). The job size is read from the installed
// communicator when tracing and recorded in each op, so that a program traced before
// distributed::init raises an Error in a larger job instead of running as one rank.
#include <numeric>
#include <string>

#include "dsl/trace.h"
#include "fluxion/error.h"
#include "fluxion/ops.h"
#include "support/communicator.h"

namespace fluxion {
namespace {

using ir::Op;

ir::Attrs job(int64_t root = 0) {
  ir::Attrs a;
  a.ranks = support::communicator()->size();
  a.root = root;
  return a;
}

// x's `axis` (negative counts from the end), checked.
int64_t checked_axis(const Tensor& x, int64_t axis, const char* op, const Loc& loc) {
  int64_t rank = static_cast<int64_t>(x.shape().size());
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    detail::fail(op, "axis " + std::to_string(axis) + " is out of range for " + x.type().str(), &loc);
  }
  return a;
}

// op applied along `axis` of x: the op works on dimension 0, so the axis is moved there and back.
Tensor along_axis(const Tensor& x, int64_t axis, Op op, const Loc& loc) {
  if (axis == 0) return detail::emit1(op, {x}, loc, job());
  std::vector<int64_t> perm(x.shape().size());
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + axis);
  perm.insert(perm.begin(), axis);
  std::vector<int64_t> back(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) back[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return permute(detail::emit1(op, {permute(x, perm, loc)}, loc, job()), back, loc);
}

}  // namespace

Tensor all_reduce(const Tensor& x, ReduceOp op, Loc loc) {
  switch (op) {
    case ReduceOp::Sum: return detail::emit1(Op::AllReduceSum, {x}, loc, job());
    case ReduceOp::Mean: return detail::emit1(Op::AllReduceMean, {x}, loc, job());
    case ReduceOp::Max: return detail::emit1(Op::AllReduceMax, {x}, loc, job());
    case ReduceOp::Min: return detail::emit1(Op::AllReduceMin, {x}, loc, job());
  }
  detail::fail("all_reduce", "unknown reduction", &loc);
}

Tensor all_gather(const Tensor& x, int64_t axis, Loc loc) {
  if (x.shape().empty()) return detail::emit1(Op::AllGather, {reshape(x, {1}, loc)}, loc, job());
  return along_axis(x, checked_axis(x, axis, "all_gather", loc), Op::AllGather, loc);
}

Tensor reduce_scatter(const Tensor& x, int64_t axis, Loc loc) {
  int64_t a = checked_axis(x, axis, "reduce_scatter_sum", loc);
  int64_t ranks = support::communicator()->size();
  if (x.shape()[static_cast<size_t>(a)] % ranks != 0) {
    detail::fail("reduce_scatter_sum",
                 "axis " + std::to_string(a) + " of " + x.type().str() + " must be a multiple of the job size, " +
                     std::to_string(ranks),
                 &loc);
  }
  return along_axis(x, a, Op::ReduceScatterSum, loc);
}

Tensor broadcast_from(const Tensor& x, int root, Loc loc) {
  return detail::emit1(Op::BroadcastFrom, {x}, loc, job(root));
}

Tensor rank_index(Loc loc) { return detail::emit1(Op::RankIndex, {}, loc, job()); }

}  // namespace fluxion
