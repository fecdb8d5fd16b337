// simplify: the graph-IR cleanup run once a program is final (after differentiation).
#include "transforms/passes/passes.h"

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
  checked(inline_custom_rules, p);
  checked(sum_halves_in_f32, p);
  checked(rewrite_transposed_products, p);
  checked(compute_below_unit_reshapes, p);
  // Each pass can expose work for the others (a folded constant makes two nodes equal, a merge
  // leaves a node dead), so they run until none changes anything. That ends: a pass that
  // changes the program either turns a non-constant node into a constant (folding) or removes
  // a node (CSE, DCE), at any depth, so (nodes, non-constant nodes) decreases every round.
  bool changed = true;
  while (changed) {
    changed = checked(fold_constants, p);
    changed = checked(eliminate_common_subexpressions, p) || changed;
    changed = checked(eliminate_dead_code, p) || changed;
  }
}

}  // namespace fluxion::passes
