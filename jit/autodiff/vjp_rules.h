// The reverse (vector-Jacobian product) rule of every op, written as graph IR.
#pragma once

#include <vector>

#include "jit/autodiff/builder.h"

namespace fluxion::autodiff {

// For node n (already in the region b writes to) whose results have adjoints `adjoints`
// (one per result), returns one adjoint contribution per operand: a value id, or -1 for an
// operand with `want[i]` false or no derivative.
std::vector<ir::ValueId> vjp(Builder& b, const ir::Node& n, const std::vector<ir::ValueId>& adjoints,
                             const std::vector<bool>& want);

// The families, one file each.
std::vector<ir::ValueId> vjp_elementwise(Builder& b, const ir::Node& n, ir::ValueId g, const std::vector<bool>& want);
std::vector<ir::ValueId> vjp_structural(Builder& b, const ir::Node& n, ir::ValueId g, const std::vector<bool>& want);

}  // namespace fluxion::autodiff
