// A kernel that materializes a concatenation along an inner axis, run one part at a time.
#include "backends/cpu/codegen.h"

namespace fluxion::cpu {

using llvm::Value;

// Element by element, a concatenation reads every part at a clamped index and selects one,
// which LLVM can only vectorize with gathers (an LSTM's gate gradients joined into [B, 4H]).
// Run the kernel as one loop nest per part instead, with the concatenation's value at each
// index known to be its part's element there: plain loads, consecutive along the axis.
// Dimension 0 is left whole, so threads split the kernel as before.
void KernelEmitter::concat_by_pieces(Value* lo, Value* hi) {
  const ir::Node* concat = &region_.nodes[static_cast<size_t>(kernel_.plan.node)];
  size_t ax = static_cast<size_t>(concat->attrs.axes[0]);
  int64_t offset = 0;
  for (ir::ValueId part : concat->operands) {
    Shape piece = kernel_.space;
    piece[ax] = region_.type(part).shape[ax];
    if (piece[ax] == 0) continue;
    nest(piece, lo, hi, [&](const Index& local) {
      Value* x = at(part, local);
      Index idx = local;
      idx[ax] = builder_.CreateAdd(local[ax], i64(offset), "", false, true);
      body_at(idx, {{concat->results[0], x}});
    });
    offset += piece[ax];
  }
}

}  // namespace fluxion::cpu
