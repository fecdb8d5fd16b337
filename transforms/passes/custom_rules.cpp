#include <vector>

#include "transforms/passes/passes.h"

namespace fluxion::passes {

bool inline_custom_rules(ir::Region& r) {
  bool changed = false;
  std::vector<ir::ValueId> replace(r.types.size());
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<ir::ValueId>(v);
  std::vector<ir::Node> nodes;
  for (ir::Node& n : r.nodes) {
    for (ir::ValueId& v : n.operands) v = replace[static_cast<size_t>(v)];
    for (ir::Region& inner : n.regions) changed = inline_custom_rules(inner) || changed;
    if (n.op != ir::Op::CustomVjp && n.op != ir::Op::CustomJvp) {
      nodes.push_back(std::move(n));
      continue;
    }
    // The primal region's nodes take the node's place; its results stand for the node's.
    ir::Region scratch;
    scratch.types = std::move(r.types);
    std::vector<ir::ValueId> results = ir::inline_region(scratch, n.regions[0], n.operands);
    r.types = std::move(scratch.types);
    for (size_t v = replace.size(); v < r.types.size(); ++v) replace.push_back(static_cast<ir::ValueId>(v));
    for (size_t i = 0; i < results.size(); ++i) replace[static_cast<size_t>(n.results[i])] = results[i];
    for (ir::Node& inlined : scratch.nodes) nodes.push_back(std::move(inlined));
    changed = true;
  }
  r.nodes = std::move(nodes);
  for (ir::ValueId& v : r.results) v = replace[static_cast<size_t>(v)];
  return changed;
}

}  // namespace fluxion::passes
