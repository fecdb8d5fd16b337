#include "jit/passes/passes.h"

namespace fluxion::passes {

void simplify(ir::Program& p) {
  // Each pass can expose work for the others (a folded constant makes two nodes equal, a merge
  // leaves a node dead); a handful of rounds reaches the fixed point on traced programs.
  for (int round = 0; round < 8; ++round) {
    bool changed = fold_constants(p.body);
    changed = eliminate_common_subexpressions(p.body) || changed;
    changed = eliminate_dead_code(p.body) || changed;
    if (!changed) break;
  }
}

}  // namespace fluxion::passes
