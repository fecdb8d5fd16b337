// The CPU backend's kernel plans (plan.cpp): every kernel's strategy and tile sizes, chosen
// from the host's vector width and registers before any LLVM IR is emitted. The emitters
// (kernel_emitter.cpp and the files of each strategy) render the plan they are given.
#pragma once

#include "ir/ir.h"
#include "kernel/kernel_ir.h"

namespace fluxion::cpu {

// Host facts the generated code and its plans are specialised for.
struct Target {
  int vector_bytes = 32;         // vector width for loops LLVM vectorises (its own preference)
  int matmul_vector_bytes = 32;  // vector width of the matmul kernel's register tiles
  int vector_registers = 16;     // what register tiles may hold (32 with AVX-512)
  int64_t l1d_bytes = 32768;     // a core's L1 data cache: a product's k-block keeps its panel there
  bool bf16_products = false;    // AVX-512-BF16's dot products of bf16 pairs into f32 (VDPBF16PS)
  bool profile = false;          // call fx_profile_mark before and after every kernel
};

// The plan of kernel k of region r (schedule s) for `target`.
kernel::KernelPlan plan_kernel(const ir::Region& r, const kernel::RegionSchedule& s, const kernel::Kernel& k,
                               const Target& target);
// Plans every kernel of the schedule and of its loop bodies, then applies the plan rules of
// FLUXION_KERNEL_PLANS (kernel/plan_rules.h); raises Error for a ruled plan the CPU code
// cannot run. Products planned shared_pack get their scratch bytes, and memory is planned again
// with `options`, those the schedule was made with.
void plan_kernels(const ir::Region& r, kernel::RegionSchedule& s, const Target& target,
                  const kernel::FusionOptions& options = {});

// Whether a product of M x N planned as register tiles runs as dot products instead: narrower
// than a vector and no more rows than one tile (gemm.cpp).
inline bool dot_products(int64_t M, int64_t N, const kernel::KernelPlan& plan) {
  return N < plan.vector_lanes && M <= plan.tile.m;
}

// The indices that a thread's share or a split part of kernel k starts at a multiple of: a
// register tile's rows where threads split a product's rows (a share of rows not a multiple
// would run its last rows one at a time), a panel's columns where parts split its columns (each
// part owns whole panels), else 1.
int64_t thread_grain(const ir::Region& r, const kernel::Kernel& k);

// A product planned shared_pack: its packed units (every k-block's panels of B, k-block by
// k-block) and their bytes (a unit is k-block rows x the tile's columns, the last k-block's rows
// padded to a whole block).
int64_t shared_pack_units(const ir::Region& r, const kernel::Kernel& k);
int64_t shared_pack_bytes(const ir::Region& r, const kernel::Kernel& k);

// Whether kernel k's stride-1 convolution runs as sliding windows: it has one group, vectors of
// at least 4 lanes, and stack buffers within the limit (sliding_conv.cpp).
bool sliding_conv_fits(const ir::Region& r, const kernel::Kernel& k, const Target& target);

}  // namespace fluxion::cpu
