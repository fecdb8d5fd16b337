// What the collectives across ranks have in common, whichever engine carries them (MPI through
// fluxion/distributed.h) and wherever they run: how values from several ranks are combined.
#pragma once

#include <string_view>

namespace fluxion {

// How a reduction across ranks combines the ranks' values. Floating-point sums are taken in
// rank order (rank 0 + rank 1 + ...), whatever the engine's own algorithm would do, so every
// rank gets the same bits and a rerun on as many ranks repeats them.
enum class ReduceOp { Sum, Mean, Max, Min };

std::string_view reduce_op_name(ReduceOp op);

}  // namespace fluxion
