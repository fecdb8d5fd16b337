// Dead-code elimination: removes nodes none of whose results is used, and which hold no effect
// (debug_print). Every other op is pure (a random op is a function of its key), so an unused
// result can never be observed. Region
// parameters and results are kept: they are the region's signature, which the enclosing op's
// shape rule checks.
#include <vector>

#include "transforms/passes/passes.h"

namespace fluxion::passes {

bool eliminate_dead_code(ir::Region& r) {
  std::vector<bool> live(r.types.size(), false);
  for (ir::ValueId v : r.results) live[static_cast<size_t>(v)] = true;
  std::vector<bool> keep(r.nodes.size(), false);
  bool changed = false;
  // Backwards: a node is live when one of its results is; then its operands are.
  for (size_t i = r.nodes.size(); i-- > 0;) {
    ir::Node& n = r.nodes[i];
    keep[i] = ir::has_effects(n);
    for (ir::ValueId v : n.results) keep[i] = keep[i] || live[static_cast<size_t>(v)];
    if (!keep[i]) continue;
    for (ir::ValueId v : n.operands) live[static_cast<size_t>(v)] = true;
    // Only live nodes' regions: a dead node's are about to go with it.
    for (ir::Region& inner : n.regions) changed = eliminate_dead_code(inner) || changed;
  }
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(r.nodes[i]));
  }
  changed = changed || kept.size() != r.nodes.size();
  r.nodes = std::move(kept);
  return changed;
}

}  // namespace fluxion::passes
