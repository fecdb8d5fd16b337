// The Vulkan backend's kernel plans (plan.cpp): every kernel's strategy, workgroup, tiles and
// row lanes, chosen from the device's tuning before any GLSL is generated. The GLSL emitters
// (glsl_kernel.cpp, glsl_scatter.cpp) render the plan they are given; no number that shapes a
// kernel is a literal in generated text.
#pragma once

#include <cstdint>

#include "fluxion/vulkan.h"
#include "ir/ir.h"
#include "kernel/kernel_ir.h"
#include "runtime/vulkan/shader_target.h"

namespace fluxion::vulkan {

// The numbers a device's plans are chosen from. Every device gets the same tuning today (the
// one measured on lavapipe and run on NVIDIA H100/H200); per-vendor or per-class choices go in
// device_tuning, in one place.
struct DeviceTuning {
  int64_t workgroup = kWorkgroupSize;  // invocations of a dispatched kernel's workgroup
  // The tiled product: a workgroup's 32 x 32 output tile, staged 16 deep, 4 x 4 results per
  // invocation ((32 / 4) x (32 / 4) = 64 invocations).
  kernel::Tile product{32, 32, 16, 4, 4};
  // A convolution as a tiled product pays when it fills tiles and workgroups: with few output
  // rows (LeNet's 1-16 channels) most of each tile would idle, and a weight gradient is a
  // handful of tiles over a very long k. Below these it runs one output element per invocation.
  int64_t min_conv_product_rows = 16;
  int64_t min_conv_product_tiles = 16;
  // Scatters: invocations a dispatched one aims at, and how far its rows are cut into blocks
  // (each block scans every index: at most scan_factor x (1 + rows / indices) blocks).
  int64_t scatter_invocations = int64_t{1} << 14;
  int64_t scan_factor = 4;
  // The loop shader's single workgroup (glsl_loop.cpp).
  int64_t loop_workgroup = kWorkgroupSize;
  bool subgroup_arithmetic = false;
  uint32_t max_shared_bytes = 16384;
  int64_t max_workgroup = kWorkgroupSize;  // the device's invocations per workgroup
};

// What the fuser may put in one GPU kernel: reductions of one set of axes, elementwise product
// epilogues, no straight-line regions, split reductions or double-buffered scan carries.
kernel::FusionOptions fusion_options();

// The tuning of a device with capabilities `target`, described by `info`.
DeviceTuning device_tuning(const VulkanDeviceInfo& info, const ShaderTarget& target);

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
