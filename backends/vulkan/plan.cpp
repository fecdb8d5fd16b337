#include "backends/vulkan/plan.h"

#include <algorithm>

#include "fluxion/error.h"
#include "kernel/conv_product.h"
#include "kernel/plan_rules.h"
#include "kernel/scatter_lowering.h"
#include "support/round_up.h"

namespace fluxion::vulkan {

using kernel::KernelPlan;
using kernel::Strategy;

kernel::FusionOptions fusion_options() {
  kernel::FusionOptions options;
  options.mixed_reductions = false;
  options.straight_line_regions = false;
  options.split_reductions = false;
  options.double_buffered_scan_carries = false;
  return options;
}

DeviceTuning device_tuning(const VulkanDeviceInfo& info, const ShaderTarget& target) {
  DeviceTuning t;
  t.subgroup_arithmetic = target.subgroup_arithmetic;
  t.max_shared_bytes = target.max_shared_bytes;
  // Every plan fits the device's workgroup limit; the backend requires kWorkgroupSize at least.
  uint32_t max_invocations = info.capabilities.max_workgroup_invocations;
  if (max_invocations != 0) t.max_workgroup = max_invocations;
  if (max_invocations != 0 && static_cast<uint64_t>(t.workgroup) > max_invocations) {
    detail::fail("vulkan", "device " + info.name + " runs at most " + std::to_string(max_invocations) +
                               " invocations per workgroup; its kernels are planned for " +
                               std::to_string(t.workgroup));
  }
  return t;
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
  KernelPlan plan;
  plan.workgroup = tuning.workgroup;
  plan.row_lanes = 1;
  while (plan.row_lanes < cols && plan.row_lanes < plan.workgroup) plan.row_lanes *= 2;
  plan.strategy = subgroups && plan.row_lanes == plan.workgroup ? Strategy::SubgroupRows : Strategy::WorkgroupRows;
  return plan;
}

bool conv_as_tiles(const ir::Region& r, const kernel::Kernel& k, const DeviceTuning& tuning) {
  kernel::ConvProduct p = kernel::conv_product(r, r.nodes[k.root]);
  const kernel::Tile& t = tuning.product;
  int64_t tiles = std::max<int64_t>(p.batch, 1) * support::ceil_div(p.M, t.m) * support::ceil_div(p.N, t.n);
  return p.M >= tuning.min_conv_product_rows && tiles >= tuning.min_conv_product_tiles;
}

}  // namespace

int64_t scatter_block_rows(const ir::Region& r, const kernel::Kernel& k, int64_t invocations,
                           const DeviceTuning& tuning) {
  kernel::ScatterGeometry g = kernel::scatter_geometry(r, r.nodes[k.root]);
  int64_t columns = std::max<int64_t>(1, g.outer * g.inner);
  int64_t blocks =
      std::min(support::ceil_div(invocations, columns), tuning.scan_factor * (1 + g.rows / std::max<int64_t>(1, g.count)));
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
      plan.strategy = Strategy::RowBlocks;
      plan.tile.m = scatter_block_rows(r, k, tuning.scatter_invocations, tuning);
      return plan;
    case kernel::KernelKind::MatMul:
      if (has_reduce) detail::fail("vulkan codegen", "internal error: a matmul kernel's epilogue reduces");
      if (r.nodes[k.root].op == ir::Op::MatMul || conv_as_tiles(r, k, tuning)) {
        const kernel::Tile& t = tuning.product;
        if ((t.m / t.thread_m) * (t.n / t.thread_n) != plan.workgroup) {
          detail::fail("vulkan", "internal error: a product tile's invocations do not make one workgroup");
        }
        plan.strategy = Strategy::Tiles;
        plan.tile = t;
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
  if ((p.strategy == Strategy::WorkgroupRows || p.strategy == Strategy::SubgroupRows) &&
      (p.row_lanes < 1 || (p.row_lanes & (p.row_lanes - 1)) != 0 || p.workgroup % p.row_lanes != 0 ||
       (p.strategy == Strategy::SubgroupRows && p.row_lanes != p.workgroup)))
    return "rows of a power of two lanes that divides the workgroup (the whole workgroup for subgroup rows)";
  if (p.strategy == Strategy::RowBlocks && t.m < 1) return "blocks of at least one row";
  return "";
}

}  // namespace

void plan_kernels(const ir::Region& r, kernel::RegionSchedule& s, const DeviceTuning& tuning) {
  kernel::plan_kernels(
      r, s, "Vulkan",
      [&](const ir::Region& region, const kernel::RegionSchedule& schedule, const kernel::Kernel& k) {
        return plan_kernel(region, schedule, k, tuning);
      },
      [&](const ir::Region&, const kernel::RegionSchedule&, const kernel::Kernel& k) {
        std::string needs = plan_fault(k.plan, tuning);
        return needs.empty() ? needs : "its plan needs " + needs;
      });
}

}  // namespace fluxion::vulkan
