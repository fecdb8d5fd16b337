// Automatic differentiation as graph-IR to graph-IR transforms (docs/autodiff.md).
#pragma once

#include <vector>

#include "ir/ir.h"

namespace fluxion::autodiff {

// Activity, forward half: the values of `f` that depend on a parameter marked in `wrt`
// through differentiable ops (float values only).
std::vector<bool> varied_values(const ir::Region& f, const std::vector<bool>& wrt);

// The reverse-mode core: inlines f into `target` on `args` (ids of target), then appends the
// adjoint computation for the given adjoints of f's results (-1: none). Returns one adjoint
// per parameter of f (-1 where not in wrt, inactive or zero); `outputs` receives f's results
// as ids of target.
// `node_index`, when given, receives for each node of f the index of its inlined copy in target.
std::vector<ir::ValueId> emit_vjp(ir::Region& target, const ir::Region& f, const std::vector<ir::ValueId>& args,
                                  const std::vector<ir::ValueId>& out_adjoints, const std::vector<bool>& wrt,
                                  std::vector<ir::ValueId>* outputs, std::vector<size_t>* node_index = nullptr);

// The forward-mode core: inlines f into `target` on `args`, then appends the computation of
// the tangents of f's results from `tangents` (one per parameter of f, -1 for a zero tangent).
// Returns one tangent per result of f (-1 where it is zero or the result is not a float).
std::vector<ir::ValueId> emit_jvp(ir::Region& target, const ir::Region& f, const std::vector<ir::ValueId>& args,
                                  const std::vector<ir::ValueId>& tangents, std::vector<ir::ValueId>* outputs);

// Reverse mode. `f` returns one float scalar. The result takes f's parameters and returns
// [f's value, d value / d p for each parameter p marked in wrt, in parameter order]. Only
// values that depend on a marked parameter and feed the result get adjoints. Raises Error for
// a parameter marked in wrt that is not a float, and for ops whose reverse rule is not built.
// With has_aux, f's further results are auxiliary: returned undifferentiated after the gradients.
ir::Region value_and_grad(const ir::Region& f, const std::vector<bool>& wrt, bool has_aux = false);

}  // namespace fluxion::autodiff
