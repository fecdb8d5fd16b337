// Batching (vmap) as a graph-IR transform: a region written for one example becomes a region
// for a batch of them, the batch a leading axis of the values that depend on it. The result is
// an ordinary region (no batch-aware op exists), so passes, fusion, memory planning and both
// backends see a plain program; the per-op rules (rules.h) move the batch axis where each op
// wants it. docs/vmap.md states the semantics.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/ir.h"

namespace fluxion::batching {

// A value of the batched program: its id, and whether the batch is its leading axis. An
// unbatched value is the same for every example and keeps the per-example type.
struct Batched {
  ir::ValueId id = -1;
  bool batched = false;
};

// Appends to `target` f's computation for `size` examples at once, f's parameter i bound to
// args[i]. Returns f's results, batched where they depend on a batched argument. Raises Error
// naming the op when a node cannot be batched.
std::vector<Batched> emit_vmap(ir::Region& target, const ir::Region& f, const std::vector<Batched>& args, int64_t size);

// f batched as a closed region: parameter i is f's with a leading axis of `size` where
// in_batched[i]; result j gets one where force_out[j] (broadcast when it does not depend on the
// batch) or where it depends on the batch. force_out may be empty (no result forced); `out`
// receives which results are batched.
ir::Region vmap(const ir::Region& f, const std::vector<bool>& in_batched, int64_t size,
                const std::vector<bool>& force_out = {}, std::vector<bool>* out = nullptr);

}  // namespace fluxion::batching
