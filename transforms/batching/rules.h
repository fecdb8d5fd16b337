// The batching rules behind emit_vmap: one per op class, each given a node whose operands (some
// batched, with the batch as leading axis) are already in the target region. Shared helpers
// for moving the batch axis live here too.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/builder.h"
#include "transforms/batching/vmap.h"

namespace fluxion::batching {

using ir::Builder;

TensorType with_batch(const TensorType& t, int64_t size);
// x with the batch axis: x itself when batched, else x broadcast to [size, ...].
ir::ValueId lift(Builder& b, const Batched& x, int64_t size);
// v with its axis `from` moved to position `to`, the other axes in order.
ir::ValueId move_axis(Builder& b, ir::ValueId v, int64_t from, int64_t to);

// The results of n (whose per-example result types are `types`) applied to `ops`, at least one
// of them batched.
std::vector<Batched> batch_node(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                                const std::vector<Batched>& ops, int64_t size);
// The same for scan, while, cond, custom_vjp and custom_jvp (batch_control.cpp).
std::vector<Batched> batch_control(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                                   const std::vector<Batched>& ops, int64_t size);
// The fallback of ops that have no batched form (random draws from batched keys): a scan over
// the examples applying n to each, so every example gets what an unbatched call would give.
std::vector<Batched> per_example(Builder& b, const ir::Node& n, const std::vector<TensorType>& types,
                                 const std::vector<Batched>& ops, int64_t size);

// Which results of f depend on the batch, given which parameters carry it.
std::vector<bool> batched_results(const ir::Region& f, const std::vector<bool>& in_batched, int64_t size);

}  // namespace fluxion::batching
