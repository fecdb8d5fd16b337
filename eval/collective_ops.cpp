// The interpreter's collective ops: the same host-side exchange as every backend's
// (runtime/collective.h), on the interpreter's values.
#include "eval/buffer.h"
#include "runtime/collective.h"

namespace fluxion::eval {

using runtime::CollectiveCall;
using runtime::collective_call;
using runtime::run_collective_in_order;

Buffer eval_collective(const ir::Node& n, const std::vector<Value>& in, const TensorType& out) {
  TensorType operand = in.empty() ? out : in[0]->type;
  CollectiveCall call = collective_call(n, operand);
  Array x = in.empty() ? Array() : to_array(*in[0]);
  Array y(out.dtype, out.shape);
  run_collective_in_order(call, in.empty() ? nullptr : x.data(), y.mutable_data());
  return Buffer{out, y.to_doubles()};
}

}  // namespace fluxion::eval
