// fx::F16Sums: the permission for f16 products to accumulate in f16 (docs/precision.md, "Sums
// in f16, where asked").
#pragma once

namespace fluxion {

// While an F16Sums object lives, the products of f16 operands this thread traces (matmul, dot
// and, when they are differentiated or batched, the products made from them) may accumulate in
// f16 instead of f32, as PyTorch's allow_fp16_reduced_precision_reduction allows: faster on a
// device with fast f16 arithmetic, less exact (a sum past 2048 no longer grows by 1). A backend
// without f16 arithmetic keeps f32; docs/precision.md lists which does what. Whether a scope is
// open is part of a jitted function's cache key, like its arguments' types, so a scope around
// a call applies to it. Scopes nest; other dtypes and ops are not affected.
class F16Sums {
 public:
  F16Sums();
  ~F16Sums();
  F16Sums(const F16Sums&) = delete;
  F16Sums& operator=(const F16Sums&) = delete;
  // Whether a scope is open on this thread.
  static bool active();
};

}  // namespace fluxion
