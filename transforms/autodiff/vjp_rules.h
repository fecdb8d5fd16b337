// The reverse (vector-Jacobian product) rule of every op, written as graph IR.
#pragma once

#include <vector>

#include "ir/builder.h"

namespace fluxion::autodiff {

using ir::Builder;

// For node n (a copy of node `index` of the region b writes to) whose results have adjoints
// `adjoints` (one per result, -1 for none), returns one adjoint contribution per operand: a
// value id, or -1 for an operand with `want[i]` false or no derivative. Loop rules may extend
// the forward node at `index` (to save what the reverse pass reads).
std::vector<ir::ValueId> vjp(Builder& b, const ir::Node& n, size_t index, const std::vector<ir::ValueId>& adjoints,
                             const std::vector<bool>& want);

// Collectives (vjp_collective.cpp, which states the semantics). Which values of f hold the same
// bits on every rank; parameters are taken as varying.
std::vector<bool> invariant_values(const ir::Region& f);
// The job size f's collectives were traced for (1 without any).
int64_t job_ranks(const ir::Region& f);
// Collective `op` (all_reduce_sum, all_gather...) of v over `ranks` ranks.
ir::ValueId collective(Builder& b, ir::Op op, ir::ValueId v, int64_t ranks);
// The adjoint contribution to a collective's operand from its result's adjoint g; `invariant`:
// whether the operand is invariant.
std::vector<ir::ValueId> vjp_collective(Builder& b, const ir::Node& n, ir::ValueId g, bool invariant);

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
