#include "jit/passes/passes.h"

namespace fluxion::passes {
namespace {

// In FLUXION_VERIFY_IR builds every pass is followed by the verifier, so a pass that breaks
// the IR is named by the failure rather than found later by a backend.
bool checked(bool (*pass)(ir::Region&), ir::Program& p) {
  bool changed = pass(p.body);
#ifdef FLUXION_VERIFY_IR
  ir::verify(p);
#endif
  return changed;
}

}  // namespace

void simplify(ir::Program& p) {
  checked(remove_stop_gradients, p);
  // Each pass can expose work for the others (a folded constant makes two nodes equal, a merge
  // leaves a node dead); a handful of rounds reaches the fixed point on traced programs.
  for (int round = 0; round < 8; ++round) {
    bool changed = checked(fold_constants, p);
    changed = checked(eliminate_common_subexpressions, p) || changed;
    changed = checked(eliminate_dead_code, p) || changed;
    if (!changed) break;
  }
}

}  // namespace fluxion::passes
