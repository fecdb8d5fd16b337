#include "runtime/collective.h"

#include <cstring>
#include <string>

#include "fluxion/error.h"
#include "support/communication_thread.h"
#include "support/communicator.h"

namespace fluxion::runtime {
namespace {

ReduceOp reduction_of(ir::Op op) {
  switch (op) {
    case ir::Op::AllReduceMean: return ReduceOp::Mean;
    case ir::Op::AllReduceMax: return ReduceOp::Max;
    case ir::Op::AllReduceMin: return ReduceOp::Min;
    default: return ReduceOp::Sum;
  }
}

// Counts r's collectives in program order into *count, and sets *position when it meets n.
void find_collective(const ir::Region& r, const ir::Node& n, int64_t* count, int64_t* position) {
  for (const ir::Node& m : r.nodes) {
    if (ir::is_collective(m.op)) {
      ++*count;
      if (&m == &n) *position = *count;
    }
    for (const ir::Region& sub : m.regions) find_collective(sub, n, count, position);
  }
}

}  // namespace

CollectiveCall collective_call(const ir::Node& n, const TensorType& operand, const ir::Program* program) {
  CollectiveCall c;
  if (program) find_collective(program->body, n, &c.collectives, &c.position);
  c.op = n.op;
  c.dtype = operand.dtype;
  c.count = n.op == ir::Op::RankIndex ? 0 : operand.numel();
  c.ranks = n.attrs.ranks;
  c.root = n.attrs.root;
  return c;
}

void run_collective(const CollectiveCall& call, const void* in, void* out) {
  std::shared_ptr<support::Communicator> comm = support::communicator();
  support::Communicator& c = *comm;
  const char* name = ir::op_name(call.op);
  if (c.size() != call.ranks) {
    detail::fail(name, "the program was traced for a job of " + std::to_string(call.ranks) +
                           " rank(s), and runs in one of " + std::to_string(c.size()) +
                           " (trace it after fluxion::distributed::init)");
  }
  if (call.op == ir::Op::RankIndex) {
    int32_t r = c.rank();
    std::memcpy(out, &r, sizeof r);
    return;
  }
  int64_t bytes = call.count * dtype_size(call.dtype);
  std::string what =
      std::string(name) + " of " + std::to_string(call.count) + " " + dtype_name(call.dtype) + " elements";
  if (call.position > 0) {
    what +=
        ", collective " + std::to_string(call.position) + " of " + std::to_string(call.collectives) + " in its program";
  }
  support::CollectiveLabel label(what);
  switch (call.op) {
    case ir::Op::AllGather: c.all_gather(in, out, bytes); return;
    case ir::Op::ReduceScatterSum: support::reduce_scatter(c, in, out, call.count, call.dtype, ReduceOp::Sum); return;
    case ir::Op::BroadcastFrom:
      if (bytes > 0) std::memcpy(out, in, static_cast<size_t>(bytes));
      c.broadcast(out, bytes, static_cast<int>(call.root));
      return;
    default: support::all_reduce(c, in, out, call.count, call.dtype, reduction_of(call.op)); return;
  }
}

std::future<void> start_collective(const CollectiveCall& call, const void* in, void* out) {
  return support::start_in_order([call, in, out] { run_collective(call, in, out); });
}

void run_collective_in_order(const CollectiveCall& call, const void* in, void* out) {
  support::run_in_order([&] { run_collective(call, in, out); });
}

}  // namespace fluxion::runtime
