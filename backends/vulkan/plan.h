// The Vulkan backend's kernel plans (plan.cpp): every kernel's strategy, workgroup, tiles and
// row lanes, chosen from the device's tuning before any GLSL is generated. The GLSL emitters
// (glsl_kernel.cpp, glsl_scatter.cpp) render the plan they are given; no number that shapes a
// kernel is a literal in generated text.
#pragma once

#include <cstdint>
#include <string>

#include "fluxion/vulkan.h"
#include "ir/ir.h"
#include "kernel/kernel_ir.h"
#include "runtime/vulkan/shader_target.h"

namespace fluxion::vulkan {

// The kinds of device whose plans differ (docs/vulkan.md, "Device classes"). A device's class
// comes from its type, or from FLUXION_VULKAN_TUNING; its limits then trim the class's numbers.
enum class DeviceClass : uint8_t {
  Cpu,  // a CPU implementation (lavapipe): a few wide cores, where small workgroups and tiles pay
  Gpu,  // a GPU: many narrow lanes, workgroups of several subgroups, tiles as large as fill it
};

// The numbers a device's plans are chosen from (device_tuning). The defaults are the CPU class's.
struct DeviceTuning {
  DeviceClass device_class = DeviceClass::Cpu;
  int64_t workgroup = kWorkgroupSize;  // invocations of an elementwise or scatter kernel's workgroup
  // A reduction's workgroup, the most lanes one row gets; once it has many_rows rows or more,
  // many_rows_workgroup (the rows then fill the device, and shorter trees pay).
  int64_t reduction_workgroup = kWorkgroupSize;
  int64_t many_rows = 1024;
  int64_t many_rows_workgroup = kWorkgroupSize;
  // Rows of a reduction that lie side by side in memory (its innermost axis is kept: column
  // sums) go to neighbouring invocations, interleaved_rows of them per workgroup, so that a
  // row's lanes read whole memory transactions (0: one row's lanes side by side, as on a CPU).
  int64_t interleaved_rows = 0;
  // A reduction with fewer invocations than fill_invocations is split (split_reductions): its
  // outermost reduced axis is cut into parts of at least min_part_elements folded elements each,
  // one partial result per part, and a second reduction combines the parts in a fixed order.
  int64_t fill_invocations = 1024;
  int64_t min_part_elements = 16384;
  // Split-K: a product of fewer tiles than fill the device is cut into parts of its k of at
  // least min_part_depth each (0: never), summed by a reduction.
  int64_t min_part_depth = 0;
  // The tiled product: a workgroup's 32 x 32 output tile, staged 16 deep, 4 x 4 results per
  // invocation ((32 / 4) x (32 / 4) = 64 invocations).
  kernel::Tile product{32, 32, 16, 4, 4};
  // A larger tile for products of at least large_product_min_tiles of them (0: never), which
  // keep every multiprocessor busy with fewer, longer-lived workgroups.
  kernel::Tile large_product{32, 32, 16, 4, 4};
  int64_t large_product_min_tiles = 0;
  // A convolution as a tiled product pays when it fills tiles and workgroups: with few output
  // rows (LeNet's 1-16 channels) most of each tile would idle, and a weight gradient is a
  // handful of tiles over a very long k. Below these it runs one output element per invocation.
  int64_t min_conv_product_rows = 16;
  int64_t min_conv_product_tiles = 16;
  // Scatters: invocations a dispatched one aims at, and how far its rows are cut into blocks
  // (each block scans every index: at most scan_factor x (1 + rows / indices) blocks).
  int64_t scatter_invocations = int64_t{1} << 14;
  int64_t scan_factor = 4;
  // A scatter of at least sorted_scatter_min_indices indices (0: none) first sorts them by row in
  // one workgroup of scatter_sort_workgroup invocations, then sums each result element's run in
  // one invocation (sorted rows): work in proportion to the updates instead of blocks x indices.
  // Each of the sort's invocations compares its index with every other of its round, so its
  // time is indices x workgroup / (the lanes that issue at once): a workgroup larger than those
  // lanes only waits.
  int64_t sorted_scatter_min_indices = 0;
  int64_t scatter_sort_workgroup = kWorkgroupSize;
  // Products of f16 operands on cooperative matrices (a target with them): a workgroup's output
  // tile m x n staged k deep, each subgroup computing thread_m x thread_n of it in fragments of
  // cooperative_fragment (m x n x k); the workgroup is its subgroups' invocations
  // (cooperative_workgroup). m = 0: none.
  kernel::Tile cooperative;
  kernel::Tile cooperative_fragment;
  int64_t subgroup_size = 0;
  // The loop shader's single workgroup (glsl_loop.cpp).
  int64_t loop_workgroup = kWorkgroupSize;
  bool subgroup_arithmetic = false;
  bool float16 = false;  // f16 arithmetic: products allowed to sum in f16 do
  uint32_t max_shared_bytes = 16384;
  int64_t max_workgroup = kWorkgroupSize;  // the device's invocations per workgroup
};

// The invocations of a product tile's workgroup, and the workgroup memory it stages its
// operands' slices of `element_bytes` each in (glsl_kernel.cpp).
int64_t tile_invocations(const kernel::Tile& t);
int64_t tile_shared_bytes(const kernel::Tile& t, int64_t element_bytes);

// A cooperative tile's workgroup memory (glsl_cooperative.cpp): A's slice as f16 rows of k +
// kCooperativePad16, B's as f16 rows of n + kCooperativePad16, and per subgroup one f32 result
// fragment, rows of its n + kCooperativePad32, for the epilogue. The pads keep every
// fragment's rows 16-byte aligned and spread them over the memory banks.
inline constexpr int64_t kCooperativePad16 = 8, kCooperativePad32 = 4;
int64_t cooperative_shared_bytes(const kernel::Tile& t, const DeviceTuning& tuning);
// The invocations of cooperative tile t's workgroup: a subgroup per thread_m x thread_n block.
int64_t cooperative_workgroup(const kernel::Tile& t, const DeviceTuning& tuning);
// What cooperative tile t needs that the device of `tuning` lacks ("" when it runs there).
std::string cooperative_fault(const kernel::Tile& t, const DeviceTuning& tuning);

// What the fuser may put in one GPU kernel: reductions of one set of axes, elementwise product
// epilogues, no straight-line regions, no reductions split by threads (a GPU splits its own
// reductions: split_reductions). Scan carries are double-buffered, as on the CPU. Scatters of
// many indices get scratch for their sorted order (tuning.sorted_scatter_min_indices).
kernel::FusionOptions fusion_options(const DeviceTuning& tuning);

// The class of the device `info` describes: FLUXION_VULKAN_TUNING when it names one, else Cpu
// for a device of type "cpu" and Gpu for any other.
DeviceClass device_class(const VulkanDeviceInfo& info);
// The tuning of a device with capabilities `target`, described by `info`: its class's numbers,
// trimmed to the workgroup size and workgroup memory it has.
DeviceTuning device_tuning(const VulkanDeviceInfo& info, const ShaderTarget& target);

// How a reduction of `rows` kept indices over `cols` folded elements each is laid out: the
// workgroup, the lanes of one row, and whether neighbouring invocations take neighbouring rows
// (`rows_inner`: its innermost axis is kept).
struct ReductionLanes {
  int64_t workgroup = 0, row_lanes = 0;
  bool interleaved = false;
};
ReductionLanes reduction_lanes(int64_t rows, int64_t cols, bool rows_inner, const DeviceTuning& tuning);

// Splits every reduction of r (and of its nested regions) that would leave the device mostly
// idle into partial reductions over parts of one reduced axis and a reduction of the parts: a
// reshape that cuts the axis into [parts, extent / parts], the first reduction folding the inner
// piece, the second the parts. Products of few output tiles and a long k are split over k alike
// (split-K). The partition depends only on the shapes and the tuning, so results are the same
// run to run. Returns whether anything was split.
bool split_reductions(ir::Region& r, const DeviceTuning& tuning);

// The plan of dispatched kernel k of region r (schedule s).
kernel::KernelPlan plan_kernel(const ir::Region& r, const kernel::RegionSchedule& s, const kernel::Kernel& k,
                               const DeviceTuning& tuning);
// The plan of a kernel that runs as a block of a loop's single-workgroup shader.
kernel::KernelPlan in_loop_plan(const ir::Region& r, const kernel::Kernel& k, const DeviceTuning& tuning);
// Plans every kernel of the schedule and of its loop bodies as a dispatched kernel, then applies
// the plan rules of FLUXION_KERNEL_PLANS (kernel/plan_rules.h); raises Error for a ruled
// plan the shaders cannot render or the device cannot run.
void plan_kernels(const ir::Region& r, kernel::RegionSchedule& s, const DeviceTuning& tuning);

// A Scatter kernel's rows cut into blocks of `rows` for `invocations` (glsl_scatter.cpp).
int64_t scatter_block_rows(const ir::Region& r, const kernel::Kernel& k, int64_t invocations,
                           const DeviceTuning& tuning);

}  // namespace fluxion::vulkan
