// fluxion::eager and fluxion::debug::value (fluxion/debug.h).
#include "dsl/eager.h"

#include <string>

#include "eval/interpreter.h"
#include "fluxion/debug.h"
#include "fluxion/error.h"
#include "runtime/counters.h"

namespace fluxion {
namespace detail {
namespace {

void evaluate_nodes(const ir::Region& r, EagerValues& v) {
  v.by_id.resize(r.types.size());
  for (; v.evaluated < r.nodes.size(); ++v.evaluated) {
    const ir::Node& n = r.nodes[v.evaluated];
    std::vector<Array> operands;
    for (ir::ValueId o : n.operands) operands.push_back(v.by_id[static_cast<size_t>(o)]);
    std::vector<TensorType> types;
    for (ir::ValueId res : n.results) types.push_back(r.type(res));
    std::vector<Array> values = eval::evaluate(n, operands, types);
    for (size_t i = 0; i < n.results.size(); ++i) v.by_id[static_cast<size_t>(n.results[i])] = std::move(values[i]);
  }
}

}  // namespace

void evaluate_recorded(Frame& f) { evaluate_nodes(f.region, *f.eager); }

std::vector<Array> run_eagerly(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                               const std::vector<Array>& inputs, std::source_location loc) {
  runtime::counters().traces++;
  FrameScope scope(true);
  auto values = std::make_shared<EagerValues>();
  scope.frame().eager = values;
  std::vector<Tensor> params;
  for (const Array& a : inputs) {
    params.push_back(scope.add_param(a.type()));
    values->by_id.resize(scope.frame().region.types.size());
    values->by_id.back() = a;
  }
  std::vector<Tensor> outs = fn(params);
  ir::Region r = scope.finish(outs, "return", loc).first;
  evaluate_nodes(r, *values);
  std::vector<Array> results;
  for (ir::ValueId v : r.results) results.push_back(values->by_id[static_cast<size_t>(v)]);
  return results;
}

}  // namespace detail

namespace debug {

Array value(const Tensor& t, std::source_location loc) {
  detail::require_valid(t, "debug::value", loc);
  const std::shared_ptr<detail::Frame>& f = detail::TensorAccess::frame(t);
  if (!f->eager) {
    detail::fail("debug::value",
                 "a Tensor of type " + t.type().str() +
                     " has no value while its function is traced: jit runs the program only after tracing "
                     "(run the function with fluxion::eager to read values as it traces; inside a loop or "
                     "branch body, or in jit, print them with fluxion::debug::print)",
                 &loc);
  }
  if (!f->active) detail::fail("debug::value", "the Tensor's eager function has returned", &loc);
  detail::evaluate_recorded(*f);
  return f->eager->by_id[static_cast<size_t>(detail::TensorAccess::id(t))];
}

}  // namespace debug
}  // namespace fluxion
