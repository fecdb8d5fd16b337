#include "backends/vulkan/plan.h"

#include <algorithm>

#include "fluxion/error.h"
#include "kernel/frame.h"
#include "kernel/plan_rules.h"
#include "kernel/scatter_lowering.h"
#include "support/round_up.h"
#include "support/settings.h"

namespace fluxion::vulkan {

using kernel::KernelPlan;
using kernel::Strategy;

kernel::FusionOptions fusion_options(const DeviceTuning& tuning) {
  kernel::FusionOptions options;
  options.mixed_reductions = false;
  options.straight_line_regions = false;
  options.split_reductions = false;
  options.side_by_side_kernels = false;
  options.sorted_scatter_min_indices = tuning.sorted_scatter_min_indices;
  return options;
}

int64_t tile_invocations(const kernel::Tile& t) { return (t.m / t.thread_m) * (t.n / t.thread_n); }

int64_t tile_shared_bytes(const kernel::Tile& t, int64_t element_bytes) {
  return t.k * (t.m + 1 + t.n + 1) * element_bytes;  // As[k][m + 1] and Bs[k][n + 1]
}

int64_t cooperative_workgroup(const kernel::Tile& t, const DeviceTuning& tuning) {
  return (t.m / t.thread_m) * (t.n / t.thread_n) * tuning.subgroup_size;
}

int64_t cooperative_shared_bytes(const kernel::Tile& t, const DeviceTuning& tuning) {
  const kernel::Tile& f = tuning.cooperative_fragment;
  int64_t subgroups = (t.m / t.thread_m) * (t.n / t.thread_n);
  return 2 * (t.m * (t.k + kCooperativePad16) + t.k * (t.n + kCooperativePad16)) +
         4 * subgroups * f.m * (f.n + kCooperativePad32);
}

DeviceClass device_class(const VulkanDeviceInfo& info) {
  std::string chosen = support::text(support::Setting::vulkan_tuning);
  if (chosen == "cpu") return DeviceClass::Cpu;
  if (chosen == "gpu") return DeviceClass::Gpu;
  return info.type == "cpu" ? DeviceClass::Cpu : DeviceClass::Gpu;
}

namespace {

// The largest power of two that is at most `n` and at most `cap`.
int64_t power_of_two_within(int64_t n, int64_t cap) {
  int64_t p = 1;
  while (p * 2 <= std::min(n, cap)) p *= 2;
  return p;
}

// The GPU class, from the tile and workgroup sweep on an NVIDIA H100 (docs/vulkan.md, "Device
// classes"): 128 x 128 tiles of 8 x 8 in 256 invocations from 2048^2 on, once they make 256
// workgroups (4096^2: 4.7 against 8.1 ms for the 32 x 32 tile), 64 x 64 tiles of 4 x 4 below;
// a 64 MB map in workgroups of 512 (141 against 269 us at 64); one long row summed by 1024
// lanes (2.1 ms against 27 ms at 64), 4096 rows of 4096 by 256 (72 against 105 us at 1024).
void gpu_class(DeviceTuning& t) {
  t.workgroup = 512;
  t.reduction_workgroup = 1024;
  t.many_rows_workgroup = 256;
  t.interleaved_rows = 32;
  t.fill_invocations = int64_t{1} << 17;
  t.min_part_elements = 8192;
  t.min_part_depth = 64;
  t.product = {64, 64, 16, 4, 4};
  t.large_product = {128, 128, 16, 8, 8};
  t.large_product_min_tiles = 256;
  // A convolution as a tiled product: the output area of the CPU class's 16 tiles of 32 x 32.
  t.min_conv_product_tiles = 4;
  // GPT's embedding gradients (16,384 token indices into 65 rows) scanned in 512 invocations
  // took 3.3 ms on an H200; sorted, each of the 65 x 128 result elements sums its own run.
  t.sorted_scatter_min_indices = 1024;
  t.scatter_sort_workgroup = 128;  // an NVIDIA multiprocessor's 4 x 32 lanes
}

}  // namespace

std::string cooperative_fault(const kernel::Tile& t, const DeviceTuning& tuning) {
  const kernel::Tile& f = tuning.cooperative_fragment;
  if (f.m == 0 || tuning.subgroup_size == 0)
    return "a device with cooperative matrices (FLUXION_VULKAN_COOPERATIVE_MATRIX=on)";
  if (t.thread_m < 1 || t.thread_n < 1 || t.thread_m % f.m != 0 || t.thread_n % f.n != 0 || t.k < 1 || t.k % f.k != 0 ||
      t.m % t.thread_m != 0 || t.n % t.thread_n != 0)
    return "a tile of whole subgroup blocks (thread m x thread n) of whole " + std::to_string(f.m) + " x " +
           std::to_string(f.n) + " x " + std::to_string(f.k) + " fragments";
  if (cooperative_workgroup(t, tuning) > tuning.max_workgroup)
    return "at most " + std::to_string(tuning.max_workgroup / tuning.subgroup_size) + " subgroups";
  if (cooperative_shared_bytes(t, tuning) > tuning.max_shared_bytes)
    return "at most " + std::to_string(tuning.max_shared_bytes) + " bytes of workgroup memory";
  return "";
}

DeviceTuning device_tuning(const VulkanDeviceInfo& info, const ShaderTarget& target) {
  DeviceTuning t;
  t.device_class = device_class(info);
  if (t.device_class == DeviceClass::Gpu) gpu_class(t);
  t.subgroup_arithmetic = target.subgroup_arithmetic;
  t.float16 = target.float16;
  t.max_shared_bytes = target.max_shared_bytes;
  // Every plan fits the device's workgroup limit; the backend requires kWorkgroupSize at least.
  uint32_t max_invocations = info.capabilities.max_workgroup_invocations;
  if (max_invocations != 0) t.max_workgroup = max_invocations;
  if (static_cast<uint64_t>(t.max_workgroup) < kWorkgroupSize) {
    detail::fail("vulkan", "device " + info.name + " runs at most " + std::to_string(t.max_workgroup) +
                               " invocations per workgroup; the backend needs " + std::to_string(kWorkgroupSize));
  }
  t.workgroup = power_of_two_within(t.workgroup, t.max_workgroup);
  t.scatter_sort_workgroup = power_of_two_within(t.scatter_sort_workgroup, t.max_workgroup);
  t.reduction_workgroup = power_of_two_within(t.reduction_workgroup, t.max_workgroup);
  t.many_rows_workgroup = power_of_two_within(t.many_rows_workgroup, t.max_workgroup);
  // A tile the device cannot hold gives way: the product tile must stage f64 operands, the large
  // one f32 (product_tile checks each product's own type).
  auto fits = [&](const kernel::Tile& tile, int64_t element_bytes) {
    return tile_invocations(tile) <= t.max_workgroup && tile_shared_bytes(tile, element_bytes) <= t.max_shared_bytes;
  };
  if (!fits(t.large_product, 4)) t.large_product_min_tiles = 0;
  if (!fits(t.product, 8)) {
    t.product = DeviceTuning{}.product;
    t.min_conv_product_tiles = DeviceTuning{}.min_conv_product_tiles;
  }
  // Cooperative tiles of 64 x 64 staged 32 deep, 2 x 2 subgroups of 32 x 32 each: on an NVIDIA
  // multiprocessor 4 x 32 lanes (not yet tuned on a device).
  t.subgroup_size = info.capabilities.subgroup_size;
  if (target.cooperative() && t.subgroup_size > 0) {
    t.cooperative_fragment = {target.cooperative_m, target.cooperative_n, target.cooperative_k, 0, 0};
    t.cooperative = {64, 64, 32, 32, 32};
    if (!cooperative_fault(t.cooperative, t).empty()) t.cooperative = {};
  }
  return t;
}

ReductionLanes reduction_lanes(int64_t rows, int64_t cols, bool rows_inner, const DeviceTuning& tuning) {
  ReductionLanes out;
  auto lanes_within = [&](int64_t workgroup) {
    int64_t lanes = 1;
    while (lanes < cols && lanes < workgroup) lanes *= 2;
    return lanes;
  };
  if (tuning.interleaved_rows > 0 && rows_inner && rows > 1 && cols > 1) {
    // A row's lanes are a workgroup's rows apart: each lane reads its part of interleaved_rows
    // neighbouring rows in one transaction.
    int64_t side = power_of_two_within(rows, tuning.interleaved_rows);
    out.row_lanes = lanes_within(tuning.reduction_workgroup / side);
    out.workgroup = side * out.row_lanes;
    out.interleaved = true;
    return out;
  }
  out.workgroup = rows >= tuning.many_rows ? tuning.many_rows_workgroup : tuning.reduction_workgroup;
  out.row_lanes = lanes_within(out.workgroup);
  return out;
}

namespace {

bool is_reduce(const ir::Node& n) { return ir::op_info(n.op).cls == ir::OpClass::Reduce; }

// Reductions: invocations per row, the power of two that covers the row's folded elements, up
// to the workgroup; subgroup operations combine them when the row is the whole workgroup.
KernelPlan reducing(const ir::Region& r, const kernel::Kernel& k, const DeviceTuning& tuning) {
  const std::vector<int64_t>* axes = nullptr;
  bool subgroups = tuning.subgroup_arithmetic;
  for (size_t n : k.nodes) {
    const ir::Node& node = r.nodes[n];
    if (!is_reduce(node)) continue;
    axes = &node.attrs.axes;
    DType t = r.type(node.results[0]).dtype;
    // Subgroup max/min leave NaN handling undefined: floats keep the tree.
    subgroups = subgroups && (node.op == ir::Op::ReduceSum ? t != DType::boolean : t == DType::i32);
  }
  int64_t cols = 1;
  for (int64_t a : *axes) cols *= k.space[static_cast<size_t>(a)];
  int64_t rows = numel(k.space) / std::max<int64_t>(cols, 1);
  bool rows_inner = std::find(axes->begin(), axes->end(), static_cast<int64_t>(k.space.size()) - 1) == axes->end();
  ReductionLanes lanes = reduction_lanes(rows, cols, rows_inner, tuning);
  KernelPlan plan;
  plan.workgroup = lanes.workgroup;
  plan.row_lanes = lanes.row_lanes;
  if (lanes.interleaved) {
    plan.strategy = Strategy::InterleavedRows;
  } else {
    plan.strategy = subgroups && plan.row_lanes == plan.workgroup ? Strategy::SubgroupRows : Strategy::WorkgroupRows;
  }
  return plan;
}

// The output tiles of product `d` in tiles `t`.
int64_t tiles_of(const kernel::ProductDims& d, const kernel::Tile& t) {
  return numel(d.batch) * support::ceil_div(d.M, t.m) * support::ceil_div(d.N, t.n);
}

bool conv_as_tiles(const ir::Region& r, const kernel::Kernel& k, const DeviceTuning& tuning) {
  kernel::ProductDims d = kernel::product_dims(r, k);
  return d.M >= tuning.min_conv_product_rows && tiles_of(d, tuning.product) >= tuning.min_conv_product_tiles;
}

// The product's tile: the large one when the product fills enough of them and the device holds
// its staged operands.
kernel::Tile product_tile(const ir::Region& r, const kernel::Kernel& k, const DeviceTuning& tuning) {
  kernel::ProductDims d = kernel::product_dims(r, k);
  int64_t element_bytes = dtype_size(r.type(r.nodes[k.root].results[0]).dtype);
  bool large = tuning.large_product_min_tiles > 0 &&
               tiles_of(d, tuning.large_product) >= tuning.large_product_min_tiles &&
               tile_shared_bytes(tuning.large_product, element_bytes) <= tuning.max_shared_bytes;
  return large ? tuning.large_product : tuning.product;
}

// Whether matmul kernel k multiplies f16 values into an f32 result (its operands' views read f16
// buffers).
bool f16_product(const ir::Region& r, const kernel::Kernel& k) {
  kernel::StridedView a, b;
  return r.nodes[k.root].op == ir::Op::MatMul && kernel::matmul_operands(k, &a, &b) &&
         r.type(a.base).dtype == DType::f16 && r.type(b.base).dtype == DType::f16 &&
         r.type(r.nodes[k.root].results[0]).dtype == DType::f32;
}

// Whether k runs on cooperative matrices: f16 operands on a device with them, at least one
// subgroup's block of rows and of columns and one staged depth.
bool cooperative_product(const ir::Region& r, const kernel::Kernel& k, const DeviceTuning& tuning) {
  if (tuning.cooperative.m == 0 || !f16_product(r, k)) return false;
  kernel::ProductDims d = kernel::product_dims(r, k);
  return d.M >= tuning.cooperative.thread_m && d.N >= tuning.cooperative.thread_n && d.K >= tuning.cooperative.k;
}

// Whether k is a product of f16 values that its program allows to sum in f16.
bool allowed_f16_sums(const ir::Region& r, const kernel::Kernel& k) {
  return r.nodes[k.root].attrs.f16_sums && f16_product(r, k);
}

}  // namespace

int64_t scatter_block_rows(const ir::Region& r, const kernel::Kernel& k, int64_t invocations,
                           const DeviceTuning& tuning) {
  kernel::ScatterGeometry g = kernel::scatter_geometry(r, r.nodes[k.root]);
  int64_t columns = std::max<int64_t>(1, g.outer * g.inner);
  int64_t blocks = std::min(support::ceil_div(invocations, columns),
                            tuning.scan_factor * (1 + g.rows / std::max<int64_t>(1, g.count)));
  blocks = std::clamp<int64_t>(blocks, 1, std::max<int64_t>(1, g.rows));
  return std::max<int64_t>(1, support::ceil_div(g.rows, blocks));
}

KernelPlan plan_kernel(const ir::Region& r, const kernel::RegionSchedule&, const kernel::Kernel& k,
                       const DeviceTuning& tuning) {
  KernelPlan plan;
  plan.workgroup = tuning.workgroup;
  bool has_reduce = std::any_of(k.nodes.begin(), k.nodes.end(), [&](size_t n) { return is_reduce(r.nodes[n]); });
  switch (k.kind) {
    case kernel::KernelKind::Scatter:
      if (k.scratch_bytes > 0) {
        plan.strategy = Strategy::SortedRows;
        plan.tile.m = tuning.scatter_sort_workgroup;
        return plan;
      }
      plan.strategy = Strategy::RowBlocks;
      plan.tile.m = scatter_block_rows(r, k, tuning.scatter_invocations, tuning);
      return plan;
    case kernel::KernelKind::MatMul:
      if (has_reduce) detail::fail("vulkan codegen", "internal error: a matmul kernel's epilogue reduces");
      if (cooperative_product(r, k, tuning)) {
        plan.strategy = Strategy::CooperativeTiles;
        plan.tile = tuning.cooperative;
        plan.workgroup = cooperative_workgroup(plan.tile, tuning);
      } else if (r.nodes[k.root].op == ir::Op::MatMul || conv_as_tiles(r, k, tuning)) {
        plan.strategy = Strategy::Tiles;
        plan.tile = product_tile(r, k, tuning);
        plan.workgroup = tile_invocations(plan.tile);
        plan.f16_sums = tuning.float16 && plan.tile.thread_n % 2 == 0 && allowed_f16_sums(r, k);
      } else {
        plan.strategy = Strategy::Direct;
      }
      return plan;
    case kernel::KernelKind::StraightLine:
      detail::fail("vulkan codegen", "internal error: straight-line kernels are not a GPU strategy");
    case kernel::KernelKind::Loop: break;
  }
  if (has_reduce) return reducing(r, k, tuning);
  plan.strategy = Strategy::PerIndex;
  return plan;
}

KernelPlan in_loop_plan(const ir::Region& r, const kernel::Kernel& k, const DeviceTuning& tuning) {
  KernelPlan plan;
  plan.strategy = Strategy::InLoop;
  plan.workgroup = tuning.loop_workgroup;
  if (k.kind == kernel::KernelKind::Scatter) plan.tile.m = scatter_block_rows(r, k, plan.workgroup, tuning);
  return plan;
}

namespace {

// What a plan's shader needs to be well formed: a workgroup the device runs, a product tile
// that its invocations cover exactly, rows of a power of two lanes within the workgroup.
std::string plan_fault(const KernelPlan& p, const DeviceTuning& tuning) {
  if (p.workgroup < 1 || p.workgroup > tuning.max_workgroup)
    return "a workgroup of 1 to " + std::to_string(tuning.max_workgroup) + " invocations";
  const kernel::Tile& t = p.tile;
  if (p.strategy == Strategy::Tiles &&
      (t.thread_m < 1 || t.thread_n < 1 || t.k < 1 || t.m % t.thread_m != 0 || t.n % t.thread_n != 0 ||
       (t.m / t.thread_m) * (t.n / t.thread_n) != p.workgroup))
    return "a tile whose invocations, (m / thread m) x (n / thread n), are the workgroup";
  if ((p.strategy == Strategy::WorkgroupRows || p.strategy == Strategy::SubgroupRows ||
       p.strategy == Strategy::InterleavedRows) &&
      (p.row_lanes < 1 || (p.row_lanes & (p.row_lanes - 1)) != 0 || p.workgroup % p.row_lanes != 0 ||
       (p.strategy == Strategy::SubgroupRows && p.row_lanes != p.workgroup) ||
       (p.strategy == Strategy::InterleavedRows && p.row_lanes == p.workgroup)))
    return "rows of a power of two lanes that divides the workgroup (the whole workgroup for subgroup rows, "
           "less than it for interleaved rows)";
  if (p.strategy == Strategy::CooperativeTiles) {
    std::string fault = cooperative_fault(t, tuning);
    if (!fault.empty()) return fault;
    if (p.workgroup != cooperative_workgroup(t, tuning))
      return "a workgroup of a subgroup per block, " + std::to_string(cooperative_workgroup(t, tuning)) +
             " invocations";
  }
  if (p.f16_sums && (p.strategy != Strategy::Tiles || !tuning.float16 || t.thread_n % 2 != 0))
    return "tiles of pairs of columns (an even thread n) on a device with f16 arithmetic";
  if (p.strategy == Strategy::RowBlocks && t.m < 1) return "blocks of at least one row";
  if (p.strategy == Strategy::SortedRows && (t.m < 1 || t.m > tuning.max_workgroup))
    return "a sort of 1 to " + std::to_string(tuning.max_workgroup) + " indices per round";
  return "";
}

}  // namespace

void plan_kernels(const ir::Region& r, kernel::RegionSchedule& s, const DeviceTuning& tuning) {
  kernel::plan_kernels(
      r, s, "Vulkan",
      [&](const ir::Region& region, const kernel::RegionSchedule& schedule, const kernel::Kernel& k) {
        return plan_kernel(region, schedule, k, tuning);
      },
      [&](const ir::Region& region, const kernel::RegionSchedule&, const kernel::Kernel& k) {
        std::string needs = plan_fault(k.plan, tuning);
        if (needs.empty() && k.plan.strategy == Strategy::CooperativeTiles && !f16_product(region, k))
          needs = "a product of f16 operands into an f32 result";
        if (needs.empty() && k.plan.f16_sums && !allowed_f16_sums(region, k))
          needs = "a product of f16 operands allowed to sum in f16";
        return needs.empty() ? needs : "its plan needs " + needs;
      });
}

}  // namespace fluxion::vulkan
