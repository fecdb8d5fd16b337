// Kernel IR: what the fuser makes of a graph-IR region and what the CPU and Vulkan backends
// consume. A region becomes an ordered list of steps; a step is either a kernel (a loop over an
// index space that computes a fused group of graph-IR nodes at each index) or a control-flow
// node whose regions have kernel IR of their own. Every value that crosses a kernel boundary is
// materialized: it gets storage from the memory plan. docs/kernels.md has the fusion rules.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "kernel/plan.h"

namespace fluxion::kernel {

enum class KernelKind : uint8_t {
  // A loop nest over `space`; each node is computed at each index. Elementwise nodes, reductions
  // (accumulated into their materialized result), and "gathering" nodes (conv, pooling and their
  // gradients, argmax, fallback matmul) that compute one output element from materialized
  // operands with an inner loop.
  Loop,
  // A register-blocked matrix product (`root`: a matmul, or a convolution or one of its
  // gradients read as im2col) over `space` = its output shape, with the other nodes as an
  // epilogue evaluated on each finished output tile.
  MatMul,
  // A whole small region (a loop body whose arrays are all tiny) as straight-line code: every
  // element of every value computed at constant indices, reductions and matrix products
  // unrolled, only the region's results stored (straight_line.cpp). `space` is empty; `nodes` is
  // every node but the baked constants.
  StraightLine,
  // A scatter_add (`root`, its only node) over `space` = its result's shape, reading stored
  // operands: each result element is owned by one thread or invocation, which zeroes it and adds
  // its updates in increasing index order (scatter_lowering.h), so the sums are the same bits on
  // every backend, thread count and run.
  Scatter,
};

// A view of a buffer as offset + strides (in elements) over a shape.
struct StridedView {
  ir::ValueId base = -1;  // a value with its own storage
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

// What a split kernel's parts (Kernel::split_chunks) cut: its outermost dimension; a matrix
// product's columns, where every reduction in it folds them (each part then packs only its own
// columns of the right operand); the images a convolution's weight gradient sums over, where
// the kernel is that gradient alone (each part sums its images into a partial gradient); or
// the depth (k) a matrix product alone sums over, where its result has too few rows and
// columns to give every thread a share (each part sums its range of k into a partial product).
enum class SplitOver : uint8_t { Outer, Columns, Images, Depth };

struct Kernel {
  KernelKind kind = KernelKind::Loop;
  Shape space;
  std::vector<size_t> nodes;       // owned nodes (region node indices), in execution order
  std::vector<size_t> recomputed;  // cheap nodes of other kernels computed here again, not stored
  size_t root = 0;                 // MatMul: the matmul or convolution node; Scatter: the scatter_add
  bool parallel = false;           // the outermost dimension may be split across threads
  // A kernel whose reductions fold the outermost dimension (so it is not `parallel`), a weight
  // gradient alone (which sums over its images) or a product alone (over its depth) may run as
  // `split_chunks` (> 1) parts (of what: `split_over`), each accumulating into its own partial
  // results at `partials_offset` in the region's arena (`split_layout`'s part_bytes per part),
  // which are then combined in part order. The number of parts depends on the shapes alone,
  // never on the thread count, so results are the same bits on any number of threads.
  int64_t split_chunks = 0;
  SplitOver split_over = SplitOver::Outer;
  // Whether the kernel runs as parts cutting `way`.
  bool split_by(SplitOver way) const { return split_chunks > 1 && split_over == way; }
  int64_t partials_offset = 0;
  // Bytes of the region's arena the kernel uses while it runs, at `scratch_offset`, beside its
  // values: a Scatter of FusionOptions::sorted_scatter_min_indices or more indices keeps its
  // index order there (scatter_lowering.h, scatter_order_words); a CPU product planned
  // `shared_pack` its packed right operand (the CPU planner sets them, then plans memory again).
  int64_t scratch_bytes = 0;
  int64_t scratch_offset = 0;
  // How the backend runs it: chosen for the backend's target before any code is emitted (its
  // planner; plan.h). Printed after the kind, "matmul[tiles]", with its numbers at the end of
  // the kernel's line after " | ", so that a test can assert which code path and shape it takes.
  KernelPlan plan;
  // MatMul over a matmul node: the strided views it reads its two operands through, fixed when the
  // fuser ordered the kernel (matmul_operands). A view that a copy kernel stores only later (a
  // result returned both as a view and read by this product) is still read through its operands,
  // which are what this kernel was ordered after, not from the copy's buffer.
  std::vector<StridedView> operand_views;
  // Runs side by side with the kernel of the step before it (FusionOptions::side_by_side_kernels):
  // neither reads what the other computes, and the memory plan keeps every value either touches
  // apart for the whole run, so the threads may take their chunks in any order.
  bool beside_previous = false;
};

// Control: a loop or branch, or a collective, which a top-level region may run asynchronously
// (FusionOptions::async_collectives): its Control step starts it and a Wait step, before the
// first step that reads its result (or at the region's end), waits for it; the steps between
// overlap the exchange.
struct Step {
  enum class Kind : uint8_t { Kernel, Control, Wait };
  Kind kind = Kind::Kernel;
  size_t index = 0;  // into kernels, or the control or collective node's index in the region
};

// Where a value lives at run time.
enum class Storage : uint8_t {
  None,    // never needed as a buffer (computed inside kernels only)
  Param,   // a region parameter: the caller's buffer
  Slot,    // a slot of the region's arena (offset[v])
  Output,  // top-level region result written in place (output_index[v])
  Alias,   // shares another value's bytes (a reshape of a materialized value): alias_of[v]
  Global,  // a constant baked into the compiled code
  Inline,  // a splat constant, emitted as an immediate where used
  View,    // a view (transpose, broadcast, slice, ...) of other values, folded into index math
};

struct RegionSchedule {
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  // Per value id of the region.
  std::vector<Storage> storage;
  std::vector<int64_t> offset;        // Slot: byte offset in the region arena
  std::vector<ir::ValueId> alias_of;  // Alias: the value whose bytes it shares
  std::vector<int32_t> output_index;  // Output: which program result
  int64_t arena_bytes = 0;
  // Control nodes: their regions' schedules and where their arenas sit in this arena.
  std::map<size_t, std::vector<RegionSchedule>> nested;
  std::map<size_t, int64_t> nested_offset;
};

// Whether collectives overlap the computation (FusionOptions::async_collectives): yes unless
// FLUXION_ASYNC_COLLECTIVES turns it off (to measure what the overlap saves). Read once.
bool async_collectives_by_default();

// What a backend's kernels can do, which bounds what the fuser puts in one kernel.
struct FusionOptions {
  // The CPU runs a kernel's index space sequentially per thread, so one kernel may hold
  // reductions over different axes, and a matmul's epilogue may reduce. A GPU kernel runs one
  // workgroup row per kept index: its reductions must all fold the same axes, and a matmul
  // epilogue is elementwise only.
  bool mixed_reductions = true;
  // Small loop bodies become one StraightLine kernel (see `straight_line_region`). Off for the GPU, whose
  // kernels are one invocation per index.
  bool straight_line_regions = true;
  // Kernels reducing over their outermost dimension, and weight gradients alone in their
  // kernel, are split into parts with partial results (Kernel::split_over; the CPU, whose
  // threads split the parts; a GPU reduces within workgroups instead).
  bool split_reductions = true;
  // A scan's carries get a second buffer each in the scan's arena (scan_carry_buffers), so that
  // the CPU alternates them by step instead of copying each step's new carries back.
  bool double_buffered_scan_carries = true;
  // Consecutive kernels that do not depend on each other run side by side, as one hand-off to
  // the CPU's threads (Kernel::beside_previous), where at least two of them are worth a thread
  // (kMinParallelWork): a scan body's small products then share the threads instead of each
  // waiting for the one before it.
  bool side_by_side_kernels = true;
  // A top-level collective runs asynchronously from its Control step to a Wait step (Step). The
  // steps are ordered so that each collective starts as soon as its operand is ready: a
  // data-parallel step's gradient buckets are exchanged while the backward pass goes on.
  bool async_collectives = async_collectives_by_default();
  // A Scatter kernel with at least this many indices (0: none) gets scratch for its index order
  // (Kernel::scratch_bytes): a GPU sorts the indices by row and sums each row's run of updates,
  // instead of every invocation scanning every index.
  int64_t sorted_scatter_min_indices = 0;
};

// Splitting a reduction over the outermost dimension: at most kMaxSplitChunks parts, each with
// at least kSplitChunkWork units of work (kernel_work) and (matrix products) kMinSplitMatmulRows
// rows, and no more partial results to combine than an eighth of the kernel's work. A part of
// a matrix product packs the whole right operand again: with 32-row parts W5's product (256 x
// 512 x 4096) took 1.5 times as long on one thread, with 128-row parts about 5% longer.
inline constexpr int64_t kMaxSplitChunks = 64;
// Below this much work (kernel_work) a kernel runs on the calling thread, whole: a hand-off
// costs more than it saves (W1's primal, 2 x 100,352 units, took 1.8 us on one thread and
// 2.1-2.3 us on two with a threshold of 2^16 and workers that slept between kernels). With
// spinning workers 2^15 measured mixed on two cores (W3's gradient 1.82x -> 1.77x: its small
// products then cost a hand-off each); W6's memory-bound per-step kernels, which 2^15 would
// have split, are split instead by counting at least 4 operations an element (splitting.cpp).
inline constexpr int64_t kMinParallelWork = int64_t{1} << 18;
// The least work of one index of a loop kernel: its loads and stores cost about as much as a few
// scalar operations. Counting a copy or a concatenation as one operation an index kept W6's
// [256, 256] gradient concatenations on the calling thread, where they took 8.4 us against 4.5 us
// at one thread, because the two threads' products had left their operands in the other core's
// cache; split like the products, 4.2 us.
inline constexpr int64_t kLeastOperationsPerIndex = 4;
// The least work of one part of a split reduction: 2^16 cut an LSTM step's gradient kernels
// into parts of a few hundred elements, and rnn_train ran slower on two threads than on one.
inline constexpr int64_t kSplitChunkWork = int64_t{1} << 18;
inline constexpr int64_t kMinSplitMatmulRows = 128;
// A product whose reductions all fold its columns is split over them instead where that gives
// more parts: each part then packs only its own columns of the right operand, and W5's product
// (256 rows, 4096 columns) becomes 32 parts instead of 2. A multiple of every CPU's panel width.
inline constexpr int64_t kMinSplitMatmulColumns = 128;
// The least output pixels (images x pixels per image) of a part of a convolution's weight
// gradient split over its images: a part's fixed cost (on the CPU, a horizontal sum of every
// accumulator vector) made LeNet's second weight gradient (8 x 8 pixels an image) take 1.01 ms
// in 32 parts of 4 images against 0.76 ms unsplit, while its first (24 x 24) took the same
// 0.39 ms in 32 parts. The split is taken only where it gives more parts than the output
// channels that threads would otherwise share.
inline constexpr int64_t kMinSplitPixels = 2048;
// The threads a program's work is cut for: part counts come from the program and this number,
// never from the live thread count, so that results are the same bits on any number of threads.
// The CPU planner also gives a product's panels to threads when it has this many: W5's gradient
// dW (256 x 512, k = 4096) split by rows had each of 16 threads pack all of B (8 MiB).
inline constexpr int64_t kTunedThreads = 16;
// A matrix product alone is split over its depth (SplitOver::Depth) when its result gives fewer
// than kTunedThreads shares (a share: a register tile's rows, at most kDepthShareRows, or a
// panel of kDepthShareColumns columns, as threads cut an unsplit product), into up to
// kTunedThreads parts of at least kMinSplitDepth of k each, starting at multiples of
// kSplitDepthGrain (a multiple of every backend's k-block, so that a part's range is whole
// k-blocks).
inline constexpr int64_t kDepthShareRows = 8;
inline constexpr int64_t kDepthShareColumns = 16;
inline constexpr int64_t kMinSplitDepth = 1024;
inline constexpr int64_t kSplitDepthGrain = 256;
// Kernel k's work: multiply-adds for a matrix product or convolution (whose weight gradient
// sums over every image and pixel), else the elements of its index space times the scalar
// operations computed at each (OpInfo::cost).
int64_t kernel_work(const ir::Region& r, const Kernel& k);
// The nodes of a kernel whose results its split folds (node indices, in node order): the
// reductions over what the parts cut (Kernel::split_over), or a weight gradient split over its
// images. A split kernel accumulates them into partial results: where each one's partial result
// starts within a part's bytes, and a part's bytes.
struct SplitLayout {
  std::vector<size_t> folded;
  std::vector<int64_t> offsets;
  int64_t part_bytes = 0;
};
SplitLayout split_layout(const ir::Region& r, const Kernel& k);
// How many indices a split kernel's parts share out: its outermost dimension, its columns or its
// images (Kernel::split_over).
int64_t split_extent(const ir::Region& r, const Kernel& k);

// Splits `r` into kernels and steps (fuse.cpp). `top_level`: results may be written in place into
// the caller's output buffers.
RegionSchedule schedule(const ir::Region& r, bool top_level, const FusionOptions& options = {});

// Whether the nested region r runs as one StraightLine kernel: no control flow, no convolution,
// pooling, random numbers or scatter, every array at most kMaxStraightLineElements and about
// kMaxStraightLineWork scalar operations in all. A step of W7 is ~60 operations that would
// otherwise be 3 kernels forward and 7 backward, each a loop with loads and stores.
inline constexpr int64_t kMaxStraightLineElements = 256;
inline constexpr int64_t kMaxStraightLineWork = 2048;
bool straight_line_region(const ir::Region& r);
RegionSchedule straight_line_schedule(const ir::Region& r);

// Assigns arena offsets to every Slot value and nested arena (memory_plan.cpp):
// slots whose lifetimes do not overlap share bytes.
void plan_memory(const ir::Region& r, RegionSchedule& s, const FusionOptions& options);
// plan_memory again over r and every region nested in it, innermost first: after a backend's
// planner has given kernels scratch bytes.
void replan_memory(const ir::Region& r, RegionSchedule& s, const FusionOptions& options);
// The second buffers of a scan's carries (FusionOptions::double_buffered_scan_carries; memory_plan.cpp):
// each carry's offset in the scan's nested arena, after the body's arena, and the arena's bytes.
struct ScanCarryBuffers {
  std::vector<int64_t> offsets;
  int64_t bytes = 0;
};
ScanCarryBuffers scan_carry_buffers(const ir::Node& scan, int64_t body_arena_bytes);

// How a loop's carries are updated from its body's results (the first `carries` results),
// the same for every backend: a result that is the carry's own parameter needs nothing; one
// that is another parameter is copied through a staging buffer first, so that a swap of carries
// reads the old values; any other result is copied directly. `first_param`: the body
// parameter of carry 0 (a scan body's parameter 0 is its iteration index).
enum class CarryUpdate : uint8_t { Unchanged, Staged, Direct };
std::vector<CarryUpdate> carry_updates(const ir::Region& body, size_t carries, size_t first_param);

// The strided views a MatMul kernel over a matmul node reads its operands through
// (Kernel::operand_views; false when it has none).
bool matmul_operands(const Kernel& k, StridedView* a, StridedView* b);

// One line per kernel and step, naming the graph ops each kernel contains; nested regions
// indented. Used by Compiled::kernels() and FLUXION_DUMP_IR.
std::string print(const ir::Region& r, const RegionSchedule& s, int indent = 0);
// The line of `print` for kernel `index` of region r.
std::string kernel_line(const ir::Region& r, const Kernel& k, size_t index);
// The line of `print` for the kernel that computes the node at `path` (its index in r, then
// pairs of region index and node index into nested regions), "" when no kernel does (a
// control node, a view folded into its users' index math).
std::string kernel_containing(const ir::Region& r, const RegionSchedule& s, const std::vector<size_t>& path);
// Every kernel of the region and of its loop bodies in the order a backend runs (and numbers)
// them: steps in order, a control step's regions in order. `lines`: kernel_line for each,
// those of loop bodies prefixed with where they are ("scan@4.body: kernel 0 straight ...").
std::vector<std::string> kernel_lines(const ir::Region& r, const RegionSchedule& s);
// Calls `visit` on every kernel of the schedule and of its loop bodies, with the region and
// schedule it belongs to, in kernel_lines' order (so that a backend can plan them).
void for_each_kernel(const ir::Region& r, RegionSchedule& s,
                     const std::function<void(const ir::Region&, const RegionSchedule&, Kernel&)>& visit);

// Follows transpose, broadcast, slice and compatible reshapes from `v` down to a value whose
// storage is not View; false when the chain cannot be expressed by strides. With `widening`, it
// also goes through conversions of f16 or bf16 to f32 (is_widening), whatever their storage: the
// base is then the 16-bit value, which a reader widens as it loads.
bool strided_view(const ir::Region& r, const RegionSchedule& s, const std::vector<int32_t>& producer, ir::ValueId v,
                  StridedView* out, bool widening = false);

// Whether n converts an f16 or bf16 value to f32: exact, so reading the 16-bit value and widening
// it as it is loaded gives the same bits as reading the converted one.
bool is_widening(const ir::Region& r, const ir::Node& n);

// A schedule with no kernels or steps yet: no value has storage but the parameters (Param).
RegionSchedule unplanned_schedule(const ir::Region& r);

// The node index producing each value of r, or -1 for parameters.
std::vector<int32_t> producers(const ir::Region& r);

// A strided or dilated convolution with at most this many taps per output (channels x window)
// and no padding is computed directly, its taps unrolled so that the loop over output columns
// vectorises; others run as the MatMul kernel (over im2col, or on the CPU as sliding windows
// when the stride is 1).
inline constexpr int64_t kMaxUnrolledTaps = 32;
bool is_direct_conv(const ir::Region& r, const ir::Node& n);

}  // namespace fluxion::kernel
