// The reference interpreter: executes graph IR directly. It is the oracle every other backend
// is tested against, so it is written to be obviously right, not fast: every value is held as
// doubles and rounded to its dtype after each op (f32 results are rounded to float).
#pragma once

#include <optional>
#include <vector>

#include "fluxion/array.h"
#include "ir/ir.h"

namespace fluxion::eval {

// Runs `p` on `inputs`. Raises Error when the inputs do not match the program's parameters
// (count, dtype, shape) or a run-time check fails (a while loop past its max_iters).
std::vector<Array> run(const ir::Program& p, const std::vector<Array>& inputs);

// Where a non-finite value first appeared (the numerics check, fluxion/runtime.h).
struct NonFinite {
  // The node: its index in the program's body, then pairs (region index, node index) into the
  // regions of control nodes.
  std::vector<size_t> path;
  int64_t element = 0;  // flat index of the first non-finite element of its first such result
  double value = 0;     // that element: NaN or an infinity
};

// Replays `p` on `inputs` op by op and returns the first node, in execution order, whose
// result holds a NaN or an infinity while none of its operands does (constants, which hold
// what the user wrote, are not counted); nullopt when no node produces one.
std::optional<NonFinite> first_non_finite(const ir::Program& p, const std::vector<Array>& inputs);

// Applies one node to concrete operands (used by constant folding). The node's operand ids are
// ignored; `operands` are taken in order and `result_types` are the node's result types.
std::vector<Array> evaluate(const ir::Node& n, const std::vector<Array>& operands,
                            const std::vector<TensorType>& result_types);

}  // namespace fluxion::eval
