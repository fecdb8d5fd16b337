#include <vector>

#include "transforms/passes/passes.h"

namespace fluxion::passes {

bool remove_stop_gradients(ir::Region& r) {
  bool changed = false;
  std::vector<ir::ValueId> replace(r.types.size());
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<ir::ValueId>(v);
  for (ir::Node& n : r.nodes) {
    for (ir::ValueId& v : n.operands) v = replace[static_cast<size_t>(v)];
    for (ir::Region& inner : n.regions) changed = remove_stop_gradients(inner) || changed;
    if (n.op == ir::Op::StopGradient) {
      replace[static_cast<size_t>(n.results[0])] = n.operands[0];
      changed = true;
    }
  }
  for (ir::ValueId& v : r.results) v = replace[static_cast<size_t>(v)];
  return changed;  // the stop_gradient nodes are now dead; DCE removes them
}

}  // namespace fluxion::passes
