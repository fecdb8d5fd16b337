// A kernel's plan: how a backend maps the kernel's index space onto loops or invocations, with
// every number that shapes the code (tiles, workgroup, lanes), chosen for a target before any
// code is emitted (backends/cpu/plan.cpp, backends/vulkan/plan.cpp). Emitters render the plan;
// they never decide by trying one shape and falling back to another. docs/kernels.md, "Plans".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace fluxion::kernel {

// The strategies of both backends; their names are what Compiled::kernels() prints after the
// kernel's kind ("matmul[tiles]") and what plan overrides name.
#define FLUXION_STRATEGIES(X)                                                                     \
  X(Unplanned, "")                         /* before a backend plans the kernel */                \
  X(Scalar, "scalar")                      /* cpu: a kernel over an empty index space */          \
  X(Flat, "flat")                          /* cpu: one flat loop over every element */            \
  X(Nest, "nest")                          /* cpu: a loop nest over the index space */            \
  X(PoolWindows, "pool-windows")           /* cpu: a max-pooling gradient window by window */     \
  X(Pieces, "pieces")                      /* cpu: a concatenation part by part */                \
  X(Block, "block")                        /* cpu: a straight-line region */                      \
  X(Rows, "rows")                          /* cpu: a scatter by result rows */                    \
  X(Tiles, "tiles")                        /* both: a register-tiled matrix product */            \
  X(CooperativeTiles, "cooperative-tiles") /* gpu: f16 tiles on matrix units */                   \
  X(TransposedTiles, "transposed-tiles")   /* cpu: few rows times a transpose, as C^T tiles */    \
  X(Bf16Tiles, "bf16-tiles")               /* cpu: register tiles of bf16 pairs (AVX-512-BF16) */ \
  X(Sliding, "sliding")                    /* cpu: a stride-1 convolution as sliding windows */   \
  X(Im2col, "im2col")                      /* cpu: a convolution as a product over im2col */      \
  X(PerIndex, "per-index")                 /* gpu: one invocation per index */                    \
  X(Direct, "direct")                      /* gpu: a convolution, one output per invocation */    \
  X(WorkgroupRows, "workgroup-rows")       /* gpu: reductions combined in workgroup memory */     \
  X(SubgroupRows, "subgroup-rows")         /* gpu: reductions combined by subgroup operations */  \
  X(InterleavedRows, "interleaved-rows")   /* gpu: neighbouring invocations, neighbouring rows */ \
  X(RowBlocks, "row-blocks")               /* gpu: a scatter by blocks of result rows */          \
  X(SortedRows, "sorted-rows")             /* gpu: a scatter's indices sorted, then row sums */   \
  X(InLoop, "in-loop")                     /* gpu: a block of a loop's single-workgroup shader */

enum class Strategy : uint8_t {
#define FLUXION_STRATEGY_ENUM(name, text) name,
  FLUXION_STRATEGIES(FLUXION_STRATEGY_ENUM)
#undef FLUXION_STRATEGY_ENUM
};

const char* strategy_name(Strategy s);
// The strategy named `name`; raises Error for a name that is none.
Strategy strategy_named(std::string_view name);

// A matrix product's blocking. CPU: `m` rows of a register tile, `n` columns of a packed panel,
// `k` the k-block a panel holds. GPU: a workgroup's output tile `m` x `n` and the k step
// staged through workgroup memory, each invocation computing `thread_m` x `thread_n` results.
struct Tile {
  int64_t m = 0, n = 0, k = 0;
  int64_t thread_m = 0, thread_n = 0;
  bool operator==(const Tile&) const = default;
};

struct KernelPlan {
  Strategy strategy = Strategy::Unplanned;
  // GPU: invocations per workgroup; reductions: invocations that share one row (a power of two
  // at most the workgroup), the workgroup holding workgroup / row_lanes rows.
  int64_t workgroup = 0;
  int64_t row_lanes = 0;
  // Products: see Tile. CPU scatters and GPU row blocks: `m` is the result rows of one block;
  // GPU sorted rows: `m` is the indices its sort places per round (the sort's workgroup).
  Tile tile;
  // CPU: vector lanes of the product's tiles or the sliding window's vectors.
  int64_t vector_lanes = 0;
  // CPU products: threads split the columns (packed panels) rather than the rows; the epilogue
  // runs once over the whole result after the last k-block rather than on each tile.
  bool split_columns = false;
  bool whole_epilogue = false;
  // CPU: a batch of products of one B (its batch strides zero): B is packed once, its panels
  // shared by every batch entry (in the kernel's scratch bytes, Kernel::scratch_bytes), before
  // the products run, instead of once per entry.
  bool shared_pack = false;
  // GPU products: the tiles stage the operands and accumulate in f16 (a product of f16 values
  // allowed to sum in f16, on a device with f16 arithmetic; docs/precision.md).
  bool f16_sums = false;
  // The node the strategy is built around when it is not the kernel's root (the pooling
  // gradient of PoolWindows, the concatenation of Pieces); -1 otherwise.
  int64_t node = -1;
  bool operator==(const KernelPlan&) const = default;
};

// The plan's numbers as Compiled::kernels() prints them at the end of a kernel's line, after
// " | ": e.g. "tile 32x32x16 thread 4x4 workgroup 64"; "" when the strategy has none.
std::string plan_details(const KernelPlan& p);

}  // namespace fluxion::kernel
