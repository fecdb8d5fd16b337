// A max-pooling gradient whose windows tile its input exactly, run window by window: a
// CPU-only schedule of the gather-form gradient in kernel/gather_lowering.h. Windows do not
// overlap and never span two images, which is how threads split the work.
#include <algorithm>

#include "backends/cpu/codegen.h"

namespace fluxion::cpu {

using ir::Op;
using llvm::Value;

// A max-pooling gradient whose windows tile the input exactly (stride = window, no padding,
// input size = windows x window) read element by element would find each element's window
// maximum again and compare positions, with gathers for every load. Run window by window
// instead: each window's first maximum (or first NaN) found once, by value,
// and its elements given the gradient or zero; the rest of the kernel then runs at each of
// them. The loop over window columns vectorises with interleaved loads and stores.
void KernelEmitter::pool_grad_by_windows(Value* lo, Value* hi) {
  const ir::Node* grad = &region_.nodes[static_cast<size_t>(kernel_.plan.node)];
  const ir::Attrs& a = grad->attrs;
  ir::ValueId x = grad->operands[0], g = grad->operands[1], res = grad->results[0];
  DType t = region_.type(res).dtype;
  int64_t wh = a.window[0], ww = a.window[1];
  // Window o: its first maximum (or first NaN) in row-major order, as pool_select finds it,
  // then the rest of the kernel at each of its elements.
  auto window = [&](const Index& o) {
    memo_.clear();
    auto pos = [&](int64_t kh, int64_t kw) {
      return Index{o[0], o[1], builder_.CreateAdd(builder_.CreateMul(o[2], i64(wh)), i64(kh)),
                   builder_.CreateAdd(builder_.CreateMul(o[3], i64(ww)), i64(kw))};
    };
    Value* best = at(x, pos(0, 0));
    Value* which = i64(0);
    for (int64_t k = 1; k < wh * ww; ++k) {
      Value* v = at(x, pos(k / ww, k % ww));
      Value* better = builder_.CreateAnd(builder_.CreateNot(is_nan(best)),
                                         builder_.CreateOr(is_nan(v), builder_.CreateFCmpOGT(v, best)));
      best = builder_.CreateSelect(better, v, best);
      which = builder_.CreateSelect(better, i64(k), which);
    }
    Value* gv = at(g, o);
    for (int64_t k = 0; k < wh * ww; ++k) {
      Value* mine = builder_.CreateSelect(builder_.CreateICmpEQ(which, i64(k)), gv, constant(t, 0));
      body_at(pos(k / ww, k % ww), {{res, mine}});
    }
  };
  const Shape& gs = region_.type(g).shape;
  nest({gs[0], gs[1], gs[2]}, lo, hi, [&](const Index& row) {
    emit_for(
        builder_, i64(0), i64(gs[3]), {},
        [&](Value* col, const std::vector<Value*>&) {
          window({row[0], row[1], row[2], col});
          return std::vector<Value*>{};
        },
        LoopHint::Vectorize);
  });
}

}  // namespace fluxion::cpu
