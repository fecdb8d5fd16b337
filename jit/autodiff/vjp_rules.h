// The reverse (vector-Jacobian product) rule of every op, written as graph IR.
#pragma once

#include <vector>

#include "jit/autodiff/builder.h"

namespace fluxion::autodiff {

// For node n (a copy of node `index` of the region b writes to) whose results have adjoints
// `adjoints` (one per result, -1 for none), returns one adjoint contribution per operand: a
// value id, or -1 for an operand with `want[i]` false or no derivative. Loop rules may extend
// the forward node at `index` (to save what the reverse pass reads).
std::vector<ir::ValueId> vjp(Builder& b, const ir::Node& n, size_t index, const std::vector<ir::ValueId>& adjoints,
                             const std::vector<bool>& want);

// The families, one file each.
std::vector<ir::ValueId> vjp_elementwise(Builder& b, const ir::Node& n, ir::ValueId g, const std::vector<bool>& want);
std::vector<ir::ValueId> vjp_structural(Builder& b, const ir::Node& n, ir::ValueId g, const std::vector<bool>& want);
std::vector<ir::ValueId> vjp_cond(Builder& b, const ir::Node& n, const std::vector<ir::ValueId>& adjoints,
                                  const std::vector<bool>& want);
std::vector<ir::ValueId> vjp_custom(Builder& b, const ir::Node& n, const std::vector<ir::ValueId>& adjoints,
                                    const std::vector<bool>& want);
std::vector<ir::ValueId> vjp_custom_jvp(Builder& b, const ir::Node& n, const std::vector<ir::ValueId>& adjoints,
                                        const std::vector<bool>& want);
std::vector<ir::ValueId> vjp_while(Builder& b, const ir::Node& n, const std::vector<ir::ValueId>& adjoints,
                                   const std::vector<bool>& want);
std::vector<ir::ValueId> vjp_scan(Builder& b, const ir::Node& n, size_t index, const std::vector<ir::ValueId>& adjoints,
                                  const std::vector<bool>& want);

}  // namespace fluxion::autodiff
