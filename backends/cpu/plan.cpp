// CPU kernel plans. The thresholds and tile shapes below were measured on AVX2 and AVX-512
// hosts (docs/cpu.md); each names the register budget it is derived from.
#include "backends/cpu/plan.h"

#include <algorithm>

#include "kernel/conv_product.h"
#include "kernel/frame.h"
#include "kernel/plan_rules.h"
#include "support/round_up.h"

namespace fluxion::cpu {

using kernel::KernelPlan;
using kernel::Strategy;

namespace {

// MR, the rows of a register tile, from the target's vector registers (of any element type):
// 6 x 2 vectors of accumulators fit 16 registers (AVX2) with the two B vectors and a
// broadcast; 32 registers (AVX-512) fit 8 rows, which tile the multiples of 8 that layer widths
// usually are (W3's 32 rows: four tiles, no single-row rest), or up to 12 as one tile. Rows
// that fit one register tile are one tile: rows left over after full tiles run one at a time,
// each a chain of dependent multiply-adds, where a product of 10 rows would spend most of its
// time.
constexpr int kRows = 6;
constexpr int kRowsWide = 8;
constexpr int kRowsMax = 12;  // 24 accumulators, two B vectors and a broadcast: 27 of 32 registers
// The longest k-block of a matmul (the fastest measured on AVX2 and AVX-512 hosts alike).
constexpr int64_t kBlockK = 256;
// A product's result up to this size (L1) runs its epilogue once, after its last k-block, over
// all of it: its loops are then as long as the rows, and a reduction along a row (a bias
// gradient) is reduced across lanes once per row instead of once per row and panel. A larger
// one runs it on each tile while that is in L1.
constexpr int64_t kWholeEpilogueBytes = 32 << 10;
// A product split over its depth has parts of whole k-blocks: every k-block (a power of two up
// to kBlockK) divides the parts' grain.
static_assert(kernel::kSplitDepthGrain % kBlockK == 0);
// Transposed tiles: 24 accumulators, two A^T vectors and a broadcast; at most a vector's lanes,
// since a tile's columns become the lanes of C's rows, and fewer where the registers are fewer.
constexpr int kMaxTileColumns = 12;

int64_t tile_rows(int64_t M, const Target& target) {
  bool wide = target.vector_registers >= 32;
  int max_rows = wide ? kRowsMax : kRows;
  return M <= max_rows ? std::max<int64_t>(1, M) : wide && M % kRowsWide == 0 ? kRowsWide : kRows;
}

// A matmul's k-block: a packed panel of B (k x two vectors) fills at most the L1 data cache, in
// powers of two up to kBlockK (256 on every host measured: 32 KiB with AVX-512's 64-byte
// vectors, and 48 KiB).
int64_t block_k(const Target& target) {
  int64_t fits = target.l1d_bytes / (2 * std::max(1, target.matmul_vector_bytes));
  int64_t kc = 1;
  while (kc * 2 <= std::min(fits, kBlockK)) kc *= 2;
  return kc;
}

int64_t matmul_lanes(const ir::Region& r, const kernel::Kernel& k, const Target& target) {
  int64_t esize = dtype_size(r.type(r.nodes[k.root].results[0]).dtype);
  return std::max<int64_t>(1, target.matmul_vector_bytes / esize);
}

// The product of few rows by a transposed right operand (W3's dW1 = dh x^T: W < M <= 2W rows,
// B's columns contiguous along k, one k-block) is computed as C^T tiles: with so few rows each
// packed panel of B would serve only M / 8 register tiles (matmul_transposed.cpp). Threads
// split C's columns, so not with a reduction in the epilogue (a bias gradient's row sums would
// be shared between threads). Two accumulators a column, two A^T vectors and a broadcast in the
// vector registers: with AVX2's 16, 8 columns spilled and W3's 10 x 32 x 128 dW2 took 2.2 us
// against 1.0 for 8 rows.
bool transposed_tiles(const ir::Region& r, const kernel::Kernel& k, const kernel::KernelFrame& frame,
                      const Target& target, KernelPlan* plan) {
  kernel::StridedView av, bv;
  if (!kernel::matmul_operands(k, &av, &bv)) return false;
  kernel::ProductDims d = kernel::product_dims(r, k);
  size_t rank = av.strides.size();
  bool a_rows = av.strides[rank - 1] == 1;
  bool b_columns = bv.strides[rank - 2] == 1 && bv.strides[rank - 1] != 1;
  int64_t W = matmul_lanes(r, k, target);
  int64_t columns = std::min<int64_t>({kMaxTileColumns, W, (target.vector_registers - 3) / 2});
  if (!d.batch.empty() || !a_rows || !b_columns || d.K > block_k(target) || W < 8 || d.M <= W || d.M > 2 * W ||
      d.N < columns || d.K % W != 0 || frame.reduces() || k.split_chunks > 1)
    return false;
  plan->strategy = Strategy::TransposedTiles;
  plan->tile = {columns, 2 * W, d.K, 0, 0};
  plan->vector_lanes = W;
  return true;
}

// Whether a product of two bf16 operands (read through widening views) in f32, planned as
// register tiles (`tiles`), runs them as AVX-512-BF16 dot products of pairs along k: each
// VDPBF16PS does 32 products where an FMA does 16, and the panel holds half the bytes. Not
// where the tiles run as dot products, and only with 16-lane tiles (a panel row of pairs is two
// vectors of 32 bf16 values). Chosen before transposed tiles: W3's dW1 (32 x 784 x 128) took
// 15.5 us as bf16 tiles and 27 us as transposed f32 tiles on a Zen 5 core.
bool bf16_pairs(const ir::Region& r, const kernel::Kernel& k, const Target& target, const KernelPlan& tiles) {
  kernel::StridedView av, bv;
  if (!target.bf16_products || !kernel::matmul_operands(k, &av, &bv)) return false;
  kernel::ProductDims d = kernel::product_dims(r, k);
  return tiles.vector_lanes == 16 && r.type(r.nodes[k.root].results[0]).dtype == DType::f32 &&
         r.type(av.base).dtype == DType::bf16 && r.type(bv.base).dtype == DType::bf16 && !dot_products(d.M, d.N, tiles);
}

// Whether a batched matmul's right operand is the same matrix for every batch entry.
bool broadcast_right_operand(const kernel::Kernel& k) {
  kernel::StridedView av, bv;
  if (!kernel::matmul_operands(k, &av, &bv)) return false;
  return std::all_of(bv.strides.begin(), bv.strides.end() - 2, [](int64_t s) { return s == 0; });
}

// The register-blocked product (gemm.cpp): MR x NR tiles (NR = two vectors), k in blocks.
// Threads split the rows, or, for a matmul with as many panels as row tiles or kTunedThreads,
// the panels, each packing only its own (both read all of A once per panel between them). Not
// with a reduction in the epilogue: a row's sum (a bias gradient) would then be shared. A
// batch of products of one B (a layer's weight applied to every sequence of a batch), whose
// threads split the batch, packs B once for every entry (shared_pack) rather than once per
// entry, where the copies saved (as kernel_work counts a copy) are worth the hand-off the
// packing adds: 256 products of 8 x 512 by one 512 x 512 took 15.4 ms instead of 26.8 at one thread.
// Threads splitting one product's rows still pack B each: packing it once for them (into
// arena bytes that the tiles then read from L2 or memory, not from L1 as each thread's own
// panel) took 256 x 2048 x 96 from 0.64 to 0.70 ms and 96 x 4096 x 200 from 1.04 to 1.47 ms
// at two threads on a 2-core VM, and 2-10% longer at one.
KernelPlan tiles(const ir::Region& r, const kernel::Kernel& k, const kernel::KernelFrame& frame, const Target& target,
                 Strategy strategy) {
  kernel::ProductDims d = kernel::product_dims(r, k);
  const ir::Node& root = r.nodes[k.root];
  KernelPlan plan;
  plan.strategy = strategy;
  plan.vector_lanes = matmul_lanes(r, k, target);
  int64_t kc = root.op == ir::Op::MatMul ? std::min(block_k(target), std::max<int64_t>(1, d.K))
                                         : kernel::conv_product(r, root).k_inner();
  plan.tile = {tile_rows(d.M, target), 2 * plan.vector_lanes, kc, 0, 0};
  int64_t esize = dtype_size(r.type(root.results[0]).dtype);
  plan.whole_epilogue = k.nodes.size() > 1 && d.M * d.N * esize <= kWholeEpilogueBytes;
  plan.split_columns =
      root.op == ir::Op::MatMul && d.batch.empty() && d.N >= 2 * plan.tile.n && !frame.reduces() &&
      d.N / plan.tile.n >= std::min(kernel::kTunedThreads, support::ceil_div<int64_t>(d.M, plan.tile.m));
  // The copies saved are every entry's but one; a product of dot products packs nothing.
  bool packs = !dot_products(d.M, d.N, plan);
  plan.shared_pack = strategy != Strategy::Im2col && packs && k.parallel && k.split_chunks <= 1 && numel(d.batch) > 1 &&
                     broadcast_right_operand(k) &&
                     (numel(d.batch) - 1) * d.K * d.N * kernel::kLeastOperationsPerIndex >= kernel::kMinParallelWork;
  return plan;
}

// The max-pooling gradient whose windows tile its input exactly, computed over the kernel's
// whole space: the kernel then runs window by window (pool_grad_windows.cpp).
int64_t exact_pool_grad(const ir::Region& r, const kernel::Kernel& k) {
  for (size_t i : k.nodes) {
    const ir::Node& n = r.nodes[i];
    if (n.op != ir::Op::MaxPool2dGrad || r.type(n.results[0]).shape != k.space) continue;
    const ir::Attrs& a = n.attrs;
    const Shape &xs = r.type(n.operands[0]).shape, &gs = r.type(n.operands[1]).shape;
    bool exact = a.strides == a.window &&
                 std::all_of(a.padding.begin(), a.padding.end(), [](int64_t p) { return p == 0; }) &&
                 xs[2] == gs[2] * a.window[0] && xs[3] == gs[3] * a.window[1];
    if (exact && is_float(r.type(n.results[0]).dtype)) return static_cast<int64_t>(i);
  }
  return -1;
}

// A concatenation along an axis other than 0 over the kernel's whole space: the kernel then runs
// one loop nest per part (concat_pieces.cpp).
int64_t inner_concat(const ir::Region& r, const kernel::Kernel& k) {
  for (size_t i : k.nodes) {
    const ir::Node& n = r.nodes[i];
    if (n.op == ir::Op::Concat && n.attrs.axes[0] > 0 && r.type(n.results[0]).shape == k.space)
      return static_cast<int64_t>(i);
  }
  return -1;
}

}  // namespace

KernelPlan plan_kernel(const ir::Region& r, const kernel::RegionSchedule& s, const kernel::Kernel& k,
                       const Target& target) {
  kernel::KernelFrame frame(r, s, k, k.plan);
  KernelPlan plan;
  switch (k.kind) {
    case kernel::KernelKind::StraightLine: plan.strategy = Strategy::Block; return plan;
    case kernel::KernelKind::Scatter: plan.strategy = Strategy::Rows; return plan;
    case kernel::KernelKind::MatMul:
      if (r.nodes[k.root].op == ir::Op::MatMul) {
        KernelPlan tiled = tiles(r, k, frame, target, Strategy::Tiles);
        if (bf16_pairs(r, k, target, tiled)) {
          tiled.strategy = Strategy::Bf16Tiles;
          return tiled;
        }
        if (transposed_tiles(r, k, frame, target, &plan)) return plan;
        return tiled;
      }
      if (sliding_conv_fits(r, k, target)) {
        plan.strategy = Strategy::Sliding;
        plan.vector_lanes = matmul_lanes(r, k, target);
        return plan;
      }
      return tiles(r, k, frame, target, Strategy::Im2col);
    case kernel::KernelKind::Loop: break;
  }
  if (k.space.empty()) {
    plan.strategy = Strategy::Scalar;
    return plan;
  }
  if (frame.collapsible()) {
    plan.strategy = Strategy::Flat;
    return plan;
  }
  plan.node = exact_pool_grad(r, k);
  if (plan.node >= 0) {
    plan.strategy = Strategy::PoolWindows;
    return plan;
  }
  plan.node = inner_concat(r, k);
  plan.strategy = plan.node >= 0 ? Strategy::Pieces : Strategy::Nest;
  return plan;
}

int64_t shared_pack_units(const ir::Region& r, const kernel::Kernel& k) {
  kernel::ProductDims d = kernel::product_dims(r, k);
  return std::max<int64_t>(1, support::ceil_div(d.K, k.plan.tile.k)) * support::ceil_div(d.N, k.plan.tile.n);
}

int64_t shared_pack_bytes(const ir::Region& r, const kernel::Kernel& k) {
  int64_t esize = dtype_size(r.type(r.nodes[k.root].results[0]).dtype);
  return shared_pack_units(r, k) * k.plan.tile.k * k.plan.tile.n * esize;
}

int64_t thread_grain(const ir::Region& r, const kernel::Kernel& k) {
  if (k.split_by(kernel::SplitOver::Columns)) return std::max<int64_t>(1, k.plan.tile.n);
  if (k.split_by(kernel::SplitOver::Depth)) return kernel::kSplitDepthGrain;
  bool rows = (k.plan.strategy == Strategy::Tiles || k.plan.strategy == Strategy::Bf16Tiles) && !k.plan.split_columns &&
              kernel::product_dims(r, k).batch.empty();
  return rows ? std::max<int64_t>(1, k.plan.tile.m) : 1;
}

namespace {

// A plan that rules changed, against the planner's: a product's register tile may have other
// rows (up to what the registers hold) and, for the plain tiles, another k-block; every other
// number is fixed by the code (two vectors of columns, the im2col grid).
std::string ruled_plan_fault(const ir::Region& r, const kernel::RegionSchedule& s, const kernel::Kernel& k,
                             const Target& target) {
  KernelPlan planned = plan_kernel(r, s, k, target);
  KernelPlan allowed = planned;
  int64_t max_rows = 0;
  if (k.plan.strategy == Strategy::Tiles || k.plan.strategy == Strategy::Bf16Tiles ||
      k.plan.strategy == Strategy::Im2col)
    max_rows = kRowsMax;
  if (k.plan.strategy == Strategy::TransposedTiles) max_rows = planned.tile.m;
  if (max_rows > 0 && k.plan.tile.m >= 1 && k.plan.tile.m <= max_rows) allowed.tile.m = k.plan.tile.m;
  if (k.plan.strategy == Strategy::Tiles && k.plan.tile.k >= 1) allowed.tile.k = k.plan.tile.k;
  if (k.plan == allowed) return "";
  std::string what = max_rows > 0 ? "only its tile's rows (1 to " + std::to_string(max_rows) + ")" +
                                        (k.plan.strategy == Strategy::Tiles ? " and k-block" : "") + " may change"
                                  : "its numbers are fixed by the code";
  return what + "; the planner's plan is '" + kernel::plan_details(planned) + "'";
}

}  // namespace

void plan_kernels(const ir::Region& r, kernel::RegionSchedule& s, const Target& target,
                  const kernel::FusionOptions& options) {
  kernel::plan_kernels(
      r, s, "CPU",
      [&](const ir::Region& region, const kernel::RegionSchedule& schedule, const kernel::Kernel& k) {
        return plan_kernel(region, schedule, k, target);
      },
      [&](const ir::Region& region, const kernel::RegionSchedule& schedule, const kernel::Kernel& k) {
        return ruled_plan_fault(region, schedule, k, target);
      });
  bool packs = false;
  kernel::for_each_kernel(r, s, [&](const ir::Region& region, const kernel::RegionSchedule&, kernel::Kernel& k) {
    if (!k.plan.shared_pack) return;
    k.scratch_bytes = shared_pack_bytes(region, k);
    packs = true;
  });
  if (packs) kernel::replan_memory(r, s, options);
}

}  // namespace fluxion::cpu
