// The Vulkan backend's kernel plans: chosen from a device's tuning before any GLSL is generated,
// and rendered as given (the shader's workgroup size, tiles and row lanes come from the plan).
// The planner and the shaders' text need no device; the listing test runs on the machine's.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <fluxion/fluxion.h>

#include "backends/vulkan/glsl.h"
#include "backends/vulkan/plan.h"
#include "backends/vulkan/shader.h"
#include "common/kernel_listing.h"
#include "common/plan_rules_file.h"
#include "common/scoped_env.h"
#include "common/test_util.h"
#include "ir/ir.h"
#include "kernel/kernel_ir.h"
#include "vulkan/require_vulkan.h"

namespace fx = fluxion;
using fx::kernel::KernelPlan;
using fx::testing::PlanRulesFile;
using fx::testing::ScopedEnv;
using fx::kernel::Strategy;
using fx::kernel::Tile;

namespace {

// Program `text` scheduled as the Vulkan backend schedules it, and planned for `tuning`.
struct Planned {
  fx::ir::Program program;
  fx::kernel::RegionSchedule schedule;
};
Planned planned(const std::string& text, const fx::vulkan::DeviceTuning& tuning) {
  Planned p{fx::ir::parse(text), {}};
  p.schedule = fx::kernel::schedule(p.program.body, true, fx::vulkan::fusion_options(tuning));
  fx::vulkan::plan_kernels(p.program.body, p.schedule, tuning);
  return p;
}

const char* kProduct = R"(func @main(%0: f32[100,70], %1: f32[70,90]) -> (f32[100,90]) {
  %2 = matmul %0, %1 : f32[100,90]
  return %2
})";

std::string row_sum(int64_t rows, int64_t cols) {
  std::string in = std::to_string(rows) + "," + std::to_string(cols), out = std::to_string(rows);
  return "func @main(%0: f32[" + in + "]) -> (f32[" + out + "]) {\n  %1 = reduce_sum %0 {axes=[1]} : f32[" + out +
         "]\n  return %1\n}";
}

TEST(VulkanPlans, ProductsAreTiledByTheDevicesTuning) {
  fx::vulkan::DeviceTuning tuning;
  Planned p = planned(kProduct, tuning);
  ASSERT_EQ(p.schedule.kernels.size(), 1u);
  const KernelPlan& plan = p.schedule.kernels[0].plan;
  EXPECT_EQ(plan.strategy, Strategy::Tiles);
  EXPECT_EQ(plan.tile, (Tile{32, 32, 16, 4, 4}));
  EXPECT_EQ(plan.workgroup, 64);
  EXPECT_EQ(fx::kernel::plan_details(plan), "tile 32x32x16 thread 4x4 workgroup 64");
}

TEST(VulkanPlans, ReductionsShareRowsByTheirLength) {
  fx::vulkan::DeviceTuning tuning;
  // A row of 10 elements: 16 invocations a row, 4 rows a workgroup.
  KernelPlan short_rows = planned(row_sum(300, 10), tuning).schedule.kernels[0].plan;
  EXPECT_EQ(short_rows.strategy, Strategy::WorkgroupRows);
  EXPECT_EQ(short_rows.row_lanes, 16);
  // A row of 1000: the whole workgroup, combined by subgroup operations where the device has them.
  KernelPlan long_rows = planned(row_sum(3, 1000), tuning).schedule.kernels[0].plan;
  EXPECT_EQ(long_rows.strategy, Strategy::WorkgroupRows);
  EXPECT_EQ(long_rows.row_lanes, 64);
  tuning.subgroup_arithmetic = true;
  EXPECT_EQ(planned(row_sum(3, 1000), tuning).schedule.kernels[0].plan.strategy, Strategy::SubgroupRows);
  // A wider reduction workgroup: rows of 1000 take 256 invocations.
  tuning.reduction_workgroup = 256;
  EXPECT_EQ(planned(row_sum(3, 1000), tuning).schedule.kernels[0].plan.row_lanes, 256);
}

TEST(VulkanPlans, SmallConvolutionsRunOneOutputPerInvocation) {
  fx::vulkan::DeviceTuning tuning;
  std::string lenet = R"(func @main(%0: f32[4,1,28,28], %1: f32[6,1,5,5]) -> (f32[4,6,24,24]) {
  %2 = conv2d %0, %1 {strides=[1,1], padding=[0,0,0,0], dilation=[1,1]} : f32[4,6,24,24]
  return %2
})";
  EXPECT_EQ(planned(lenet, tuning).schedule.kernels[0].plan.strategy, Strategy::Direct);
  std::string wide = R"(func @main(%0: f32[8,32,16,16], %1: f32[64,32,3,3]) -> (f32[8,64,14,14]) {
  %2 = conv2d %0, %1 {strides=[1,1], padding=[0,0,0,0], dilation=[1,1]} : f32[8,64,14,14]
  return %2
})";
  EXPECT_EQ(planned(wide, tuning).schedule.kernels[0].plan.strategy, Strategy::Tiles);
}

// A device as vulkan_devices() describes it: its type and the limits the tuning reads.
fx::VulkanDeviceInfo device(const std::string& type, uint32_t invocations) {
  fx::VulkanDeviceInfo info;
  info.name = type + " device";
  info.type = type;
  info.capabilities.max_workgroup_invocations = invocations;
  return info;
}

fx::vulkan::ShaderTarget shared_memory(uint32_t bytes) {
  fx::vulkan::ShaderTarget target;
  target.max_shared_bytes = bytes;
  return target;
}

TEST(VulkanPlans, TheDeviceClassComesFromItsTypeOrTheSetting) {
  ScopedEnv automatic("FLUXION_VULKAN_TUNING", "auto");
  fx::vulkan::DeviceTuning cpu = fx::vulkan::device_tuning(device("cpu", 1024), shared_memory(32768));
  EXPECT_EQ(cpu.device_class, fx::vulkan::DeviceClass::Cpu);
  EXPECT_EQ(cpu.workgroup, 64);
  EXPECT_EQ(cpu.reduction_workgroup, 64);
  EXPECT_EQ(cpu.product, (Tile{32, 32, 16, 4, 4}));
  EXPECT_EQ(cpu.large_product_min_tiles, 0);
  // An H100: 1024 invocations and 48 KiB of workgroup memory per workgroup.
  fx::vulkan::DeviceTuning gpu = fx::vulkan::device_tuning(device("discrete", 1024), shared_memory(49152));
  EXPECT_EQ(gpu.device_class, fx::vulkan::DeviceClass::Gpu);
  EXPECT_EQ(gpu.workgroup, 512);
  EXPECT_EQ(gpu.reduction_workgroup, 1024);
  EXPECT_EQ(gpu.many_rows_workgroup, 256);
  EXPECT_EQ(gpu.product, (Tile{64, 64, 16, 4, 4}));
  EXPECT_EQ(gpu.large_product, (Tile{128, 128, 16, 8, 8}));
  EXPECT_EQ(gpu.large_product_min_tiles, 256);
  {
    ScopedEnv forced("FLUXION_VULKAN_TUNING", "cpu");
    EXPECT_EQ(fx::vulkan::device_tuning(device("discrete", 1024), shared_memory(49152)).device_class,
              fx::vulkan::DeviceClass::Cpu);
  }
  {
    ScopedEnv forced("FLUXION_VULKAN_TUNING", "GPU");
    EXPECT_EQ(fx::vulkan::device_class(device("cpu", 1024)), fx::vulkan::DeviceClass::Gpu);
  }
  ScopedEnv bad("FLUXION_VULKAN_TUNING", "fast");
  EXPECT_THROW(fx::vulkan::device_class(device("cpu", 1024)), fx::Error);
}

TEST(VulkanPlans, TheGpuClassIsTrimmedToTheDevicesLimits) {
  ScopedEnv gpu_class("FLUXION_VULKAN_TUNING", "gpu");
  // 128 invocations and 16 KiB: the workgroups shrink, neither GPU tile fits, the CPU class's does.
  fx::vulkan::DeviceTuning small = fx::vulkan::device_tuning(device("integrated", 128), shared_memory(16384));
  EXPECT_EQ(small.workgroup, 128);
  EXPECT_EQ(small.reduction_workgroup, 128);
  EXPECT_EQ(small.many_rows_workgroup, 128);
  EXPECT_EQ(small.product, (Tile{32, 32, 16, 4, 4}));
  EXPECT_EQ(small.large_product_min_tiles, 0);
  // 32 KiB: the 64 x 64 tile stages f64 operands (16.6 KB), the 128 x 128 one f32 only (16.5 KB).
  fx::vulkan::DeviceTuning mid = fx::vulkan::device_tuning(device("discrete", 1024), shared_memory(32768));
  EXPECT_EQ(mid.product, (Tile{64, 64, 16, 4, 4}));
  EXPECT_EQ(mid.large_product_min_tiles, 256);
  EXPECT_THROW(fx::vulkan::device_tuning(device("discrete", 32), shared_memory(32768)), fx::Error);
}

std::string square_product(const std::string& dtype, int64_t n) {
  std::string m = std::to_string(n), t = dtype + "[" + m + "," + m + "]";
  return "func @main(%0: " + t + ", %1: " + t + ") -> (" + t + ") {\n  %2 = matmul %0, %1 : " + t + "\n  return %2\n}";
}

TEST(VulkanPlans, GpuProductsTakeTheLargeTileOnceItFillsTheDevice) {
  ScopedEnv gpu_class("FLUXION_VULKAN_TUNING", "gpu");
  fx::vulkan::DeviceTuning tuning = fx::vulkan::device_tuning(device("discrete", 1024), shared_memory(32768));
  // 1024^2 makes 64 large tiles: the 64 x 64 tile, 256 invocations.
  KernelPlan small = planned(square_product("f32", 1024), tuning).schedule.kernels[0].plan;
  EXPECT_EQ(small.tile, (Tile{64, 64, 16, 4, 4}));
  EXPECT_EQ(small.workgroup, 256);
  // 2048^2 makes 256: the 128 x 128 tile of 8 x 8 a invocation, 256 invocations.
  KernelPlan large = planned(square_product("f32", 2048), tuning).schedule.kernels[0].plan;
  EXPECT_EQ(large.tile, (Tile{128, 128, 16, 8, 8}));
  EXPECT_EQ(large.workgroup, 256);
  EXPECT_EQ(fx::kernel::plan_details(large), "tile 128x128x16 thread 8x8 workgroup 256");
  // In f64 the large tile's operands (33 KB) do not fit 32 KiB.
  EXPECT_EQ(planned(square_product("f64", 2048), tuning).schedule.kernels[0].plan.tile, (Tile{64, 64, 16, 4, 4}));
  // Reductions give a long row of few all 1024 lanes, each of many rows 256.
  EXPECT_EQ(planned(row_sum(3, 5000), tuning).schedule.kernels[0].plan.row_lanes, 1024);
  KernelPlan many = planned(row_sum(1024, 5000), tuning).schedule.kernels[0].plan;
  EXPECT_EQ(many.row_lanes, 256);
  EXPECT_EQ(many.workgroup, 256);
  // Elementwise kernels run in workgroups of 512.
  std::string scale = "func @main(%0: f32[4096]) -> (f32[4096]) {\n  %1 = add %0, %0 : f32[4096]\n  return %1\n}";
  KernelPlan map = planned(scale, tuning).schedule.kernels[0].plan;
  EXPECT_EQ(map.strategy, Strategy::PerIndex);
  EXPECT_EQ(map.workgroup, 512);
}

// The shader of kernel 0 of `p`, compiled to SPIR-V and validated.
std::string shader(const Planned& p) {
  fx::vulkan::ShaderTarget target;
  fx::vulkan::KernelShader s =
      fx::vulkan::emit_kernel(p.program.body, p.schedule, p.schedule.kernels[0], "kernel 0", target);
  EXPECT_EQ(fx::vulkan::validate_spirv(fx::vulkan::compile_glsl(s.glsl, "kernel 0")), "");
  return s.glsl;
}

TEST(VulkanPlans, ShadersRenderThePlansNumbers) {
  fx::vulkan::DeviceTuning tuning;
  tuning.reduction_workgroup = 128;
  tuning.product = {64, 32, 8, 8, 2};  // 8 x 16 = 128 invocations
  Planned p = planned(kProduct, tuning);
  std::string glsl = shader(p);
  EXPECT_NE(glsl.find("layout(local_size_x = 128) in;"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("shared float As[8][65];"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("shared float Bs[8][33];"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("acc[8][2]"), std::string::npos) << glsl;
  EXPECT_EQ(p.schedule.kernels[0].plan.tile, tuning.product);

  Planned r = planned(row_sum(300, 10), tuning);
  glsl = shader(r);
  EXPECT_NE(glsl.find("layout(local_size_x = 128) in;"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("int lane = tid % 16;"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("* 8 + tid / 16"), std::string::npos) << glsl;  // 128 / 16 rows a workgroup
}

TEST(VulkanPlans, KernelListingPrintsEveryPlan) {
  REQUIRE_VULKAN();
  ScopedEnv cpu_class("FLUXION_VULKAN_TUNING", "cpu");
  auto f = [](fx::Tensor a, fx::Tensor b) { return fx::sum(fx::matmul(a, b), {1}); };
  fx::Array a(std::vector<float>(100 * 70, 0.5f), {100, 70}), b(std::vector<float>(70 * 90, 0.25f), {70, 90});
  std::string listing = fx::jit(f, fx::Backend::Vulkan).lower(a, b).kernels();
  std::vector<std::string> kinds = fx::testing::kernel_strategies(listing);
  ASSERT_EQ(kinds.size(), 2u) << listing;
  EXPECT_EQ(kinds[0], "matmul[tiles]") << listing;
  EXPECT_NE(listing.find("| tile 32x32x16 thread 4x4 workgroup 64"), std::string::npos) << listing;
  EXPECT_TRUE(kinds[1] == "loop[workgroup-rows]" || kinds[1] == "loop[subgroup-rows]") << listing;
  EXPECT_NE(listing.find("| row 64 workgroup 64"), std::string::npos) << listing;
}

fx::Array uniform(fx::Shape s, uint32_t seed) {
  std::vector<double> v = fx::testing::random_doubles(fx::testing::count(s), -1, 1, seed);
  return fx::Array(std::vector<float>(v.begin(), v.end()), std::move(s));
}

TEST(VulkanPlans, GpuClassPlansRunAndMatchTheInterpreter) {
  REQUIRE_VULKAN();
  ScopedEnv gpu_class("FLUXION_VULKAN_TUNING", "gpu");
  auto f = [](fx::Tensor a, fx::Tensor b) { return fx::sum(fx::tanh(fx::matmul(a, b)), {1}); };
  fx::Array a = uniform({150, 70}, 7), b = uniform({70, 190}, 8);
  std::vector<double> want = fx::jit(f, fx::Backend::Interp)(a, b).to_doubles();
  auto check = [&](const char* what) -> std::string {
    auto compiled = fx::jit(f, fx::Backend::Vulkan);
    std::vector<double> got = compiled(a, b).to_doubles();
    EXPECT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-4) << what << " " << i;
    return compiled.lower(a, b).kernels();
  };
  std::string listing = check("the gpu class");
  fx::VulkanDeviceInfo info = fx::vulkan_device();
  fx::vulkan::DeviceTuning tuning =
      fx::vulkan::device_tuning(info, shared_memory(info.capabilities.max_shared_memory_bytes));
  KernelPlan product;
  product.strategy = Strategy::Tiles;
  product.tile = tuning.product;
  product.workgroup = fx::vulkan::tile_invocations(tuning.product);
  EXPECT_NE(listing.find("| " + fx::kernel::plan_details(product)), std::string::npos) << listing;
  // The large tile, ruled onto this small product: partial tiles at every edge (where the
  // device runs 256 invocations and holds the tile).
  fx::kernel::Tile large{128, 128, 16, 8, 8};
  if (info.capabilities.max_workgroup_invocations < 256 ||
      info.capabilities.max_shared_memory_bytes < fx::vulkan::tile_shared_bytes(large, 4)) {
    return;
  }
  PlanRulesFile rules("tiles tile=128x128x16 thread=8x8 workgroup=256\n");
  listing = check("the large tile");
  EXPECT_NE(listing.find("| tile 128x128x16 thread 8x8 workgroup 256"), std::string::npos) << listing;
}

TEST(VulkanPlans, RuledTilesAndRowsRunAndMatchTheInterpreter) {
  REQUIRE_VULKAN();
  auto f = [](fx::Tensor a, fx::Tensor b) { return fx::sum(fx::tanh(fx::matmul(a, b)), {1}); };
  fx::Array a = uniform({100, 70}, 3), b = uniform({70, 90}, 4);
  std::vector<double> want = fx::jit(f, fx::Backend::Interp)(a, b).to_doubles();
  PlanRulesFile rules(
      "tiles tile=64x32x8 thread=8x4 workgroup=64\n"
      "workgroup-rows row=32 workgroup=128\n"
      "subgroup-rows row=128 workgroup=128\n");
  auto compiled = fx::jit(f, fx::Backend::Vulkan);
  std::string listing = compiled.lower(a, b).kernels();
  EXPECT_NE(listing.find("| tile 64x32x8 thread 8x4 workgroup 64"), std::string::npos) << listing;
  EXPECT_TRUE(listing.find("| row 32 workgroup 128") != std::string::npos ||
              listing.find("| row 128 workgroup 128") != std::string::npos)
      << listing;
  std::vector<double> got = compiled(a, b).to_doubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << i;
}

TEST(VulkanPlans, RuledPlansTheShadersCannotRenderAreErrors) {
  REQUIRE_VULKAN();
  auto f = [](fx::Tensor a, fx::Tensor b) { return fx::matmul(a, b); };
  fx::Array a = uniform({40, 30}, 5), b = uniform({30, 20}, 6);
  PlanRulesFile rules("tiles tile=32x32x16 thread=4x4 workgroup=128\n");  // 64 invocations cover the tile
  try {
    fx::jit(f, fx::Backend::Vulkan)(a, b);
    ADD_FAILURE() << "no error for a tile that does not fit its workgroup";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("are the workgroup"), std::string::npos) << e.what();
  }
}

// A sorted scatter's sort and sums ruled to other workgroups than the class's: the sort then
// runs in rounds of that many indices and its prefix sum over that many chunks of rows (300
// rows: more than some, fewer than others); the same bits.
TEST(VulkanPlans, RuledSortedScattersKeepTheirBits) {
  REQUIRE_VULKAN();
  ScopedEnv tuning("FLUXION_VULKAN_TUNING", "gpu");
  auto f = [](fx::Tensor u, fx::Tensor i) { return fx::scatter_add(u, i, 300); };
  std::vector<int32_t> ids(2000);
  for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<int32_t>((k * 37) % 307) - 3;
  fx::Array u = uniform({2000, 6}, 7), i(ids, {2000});
  auto planned = fx::jit(f, fx::Backend::Vulkan);
  std::string listing = planned.lower(u, i).kernels();
  EXPECT_NE(listing.find("scatter[sorted-rows] [300,6] parallel: scatter_add | block 128 workgroup"), std::string::npos)
      << listing;
  std::vector<double> want = planned(u, i).to_doubles();
  // The largest sort round the device runs, up to 256 (the reduced profile allows 128).
  int most = static_cast<int>(std::min<uint32_t>(256, fx::vulkan_device().capabilities.max_workgroup_invocations));
  for (auto [block, workgroup] : {std::pair{64, 64}, std::pair{most, 64}, std::pair{1, 64}}) {
    std::string numbers = "block " + std::to_string(block) + " workgroup " + std::to_string(workgroup);
    PlanRulesFile rules("sorted-rows block=" + std::to_string(block) + " workgroup=" + std::to_string(workgroup) +
                        "\n");
    auto ruled = fx::jit(f, fx::Backend::Vulkan);
    listing = ruled.lower(u, i).kernels();
    EXPECT_NE(listing.find("| " + numbers), std::string::npos) << listing;
    EXPECT_EQ(ruled(u, i).to_doubles(), want) << numbers;
  }
}

}  // namespace

// A product of f16 values summed in f32, as sum_halves_in_f32 writes it: [m, k] x [k, n] of
// `dtype` operands converted to f32.
std::string half_product(const std::string& dtype, int64_t m, int64_t k, int64_t n) {
  auto t = [](const std::string& dt, int64_t r, int64_t c) {
    return dt + "[" + std::to_string(r) + "," + std::to_string(c) + "]";
  };
  return "func @main(%0: " + t(dtype, m, k) + ", %1: " + t(dtype, k, n) + ") -> (" + t("f32", m, n) +
         ") {\n  %2 = convert %0 : " + t("f32", m, k) + "\n  %3 = convert %1 : " + t("f32", k, n) +
         "\n  %4 = matmul %2, %3 : " + t("f32", m, n) + "\n  return %4\n}";
}

// An H200 as the tuning reads it: 1024 invocations, subgroups of 32, 48 KiB of workgroup memory,
// with f16 cooperative-matrix fragments of 16 x `n` x 16 (none for n = 0), with or without f16
// arithmetic.
fx::vulkan::DeviceTuning cooperative_tuning(uint32_t n, uint32_t shared_bytes = 49152, bool float16 = false) {
  fx::VulkanDeviceInfo info = device("discrete", 1024);
  info.capabilities.subgroup_size = 32;
  fx::vulkan::ShaderTarget target = shared_memory(shared_bytes);
  target.float16 = float16;
  target.cooperative_m = n ? 16 : 0;
  target.cooperative_n = n;
  target.cooperative_k = n ? 16 : 0;
  return fx::vulkan::device_tuning(info, target);
}

TEST(VulkanPlans, F16ProductsTakeCooperativeTilesWhereTheTargetHasThem) {
  ScopedEnv gpu_class("FLUXION_VULKAN_TUNING", "gpu");
  fx::vulkan::DeviceTuning tuning = cooperative_tuning(16);
  EXPECT_EQ(tuning.cooperative, (Tile{64, 64, 32, 32, 32}));
  EXPECT_EQ(tuning.cooperative_fragment, (Tile{16, 16, 16, 0, 0}));
  EXPECT_EQ(fx::vulkan::cooperative_workgroup(tuning.cooperative, tuning), 128);  // 2 x 2 subgroups of 32
  // The staged slices (5,120 and 4,608 bytes) and a 16 x 16 f32 fragment per subgroup (5,120).
  EXPECT_EQ(fx::vulkan::cooperative_shared_bytes(tuning.cooperative, tuning), 14848);
  // Without the fragments, or without room for the staged slices and the fragments: none.
  EXPECT_EQ(cooperative_tuning(0).cooperative.m, 0);
  EXPECT_EQ(cooperative_tuning(16, 8192).cooperative.m, 0);
  KernelPlan f16 = planned(half_product("f16", 100, 70, 90), tuning).schedule.kernels[0].plan;
  EXPECT_EQ(f16.strategy, Strategy::CooperativeTiles);
  EXPECT_EQ(f16.tile, tuning.cooperative);
  EXPECT_EQ(f16.workgroup, 128);
  // bf16 operands (no f16 fragments of them), f32 operands, products narrower than a subgroup's
  // block or shallower than a staged slice, and a device without fragments: the f32 tiles.
  for (const std::string& other : {half_product("bf16", 100, 70, 90), square_product("f32", 256),
                                   half_product("f16", 20, 70, 90), half_product("f16", 100, 16, 90)}) {
    EXPECT_EQ(planned(other, tuning).schedule.kernels[0].plan.strategy, Strategy::Tiles) << other;
  }
  EXPECT_EQ(planned(half_product("f16", 100, 70, 90), cooperative_tuning(0)).schedule.kernels[0].plan.strategy,
            Strategy::Tiles);
}

// A product allowed to sum in f16 takes f16 tiles on a device with f16 arithmetic; without the
// permission or the arithmetic it keeps the f32 tiles, and cooperative matrices (f32 sums on
// matrix units) come first where the device has them.
TEST(VulkanPlans, ProductsAllowedToSumInF16TakeF16TilesWhereTheDeviceHasF16Arithmetic) {
  ScopedEnv gpu_class("FLUXION_VULKAN_TUNING", "gpu");
  std::string plain = half_product("f16", 100, 70, 90), allowed = plain;
  allowed.replace(allowed.find("matmul %2, %3"), 13, "matmul %2, %3 {f16_sums=true}");
  auto tuning = [](bool float16, uint32_t fragments) { return cooperative_tuning(fragments, 49152, float16); };
  KernelPlan f16 = planned(allowed, tuning(true, 0)).schedule.kernels[0].plan;
  EXPECT_EQ(f16.strategy, Strategy::Tiles);
  EXPECT_TRUE(f16.f16_sums);
  EXPECT_NE(fx::kernel::plan_details(f16).find("f16 sums"), std::string::npos);
  EXPECT_FALSE(planned(plain, tuning(true, 0)).schedule.kernels[0].plan.f16_sums);
  EXPECT_FALSE(planned(allowed, tuning(false, 0)).schedule.kernels[0].plan.f16_sums);
  KernelPlan cooperative = planned(allowed, tuning(true, 16)).schedule.kernels[0].plan;
  EXPECT_EQ(cooperative.strategy, Strategy::CooperativeTiles);
  EXPECT_FALSE(cooperative.f16_sums);
}

// The f16 tiles' shader: f16 staging and accumulators, compiled and validated.
TEST(VulkanPlans, F16SumTilesCompileToValidSpirv) {
  ScopedEnv gpu_class("FLUXION_VULKAN_TUNING", "gpu");
  std::string text = half_product("f16", 100, 70, 90);
  text.replace(text.find("matmul %2, %3"), 13, "matmul %2, %3 {f16_sums=true}");
  fx::vulkan::ShaderTarget target = shared_memory(49152);
  target.float16 = true;
  target.halves = true;
  Planned p = planned(text, fx::vulkan::device_tuning(device("discrete", 1024), target));
  ASSERT_EQ(p.schedule.kernels.size(), 1u) << fx::kernel::print(p.program.body, p.schedule);
  ASSERT_TRUE(p.schedule.kernels[0].plan.f16_sums);
  fx::vulkan::KernelShader s =
      fx::vulkan::emit_kernel(p.program.body, p.schedule, p.schedule.kernels[0], "kernel 0", target);
  EXPECT_NE(s.glsl.find("f16vec2 acc["), std::string::npos) << s.glsl;
  EXPECT_NE(s.glsl.find("shared float16_t As["), std::string::npos) << s.glsl;
  EXPECT_EQ(fx::vulkan::validate_spirv(fx::vulkan::compile_glsl(s.glsl, "kernel 0")), "");
}

TEST(VulkanPlans, CooperativeTilesCompileToValidSpirv) {
  // A batch of products of a transposed, broadcast right operand with an epilogue, in both
  // fragment shapes NVIDIA offers for f16: the shader compiles and validates (with the
  // cooperative-matrix extension and the Vulkan memory model), its fragments tile the plan's.
  ScopedEnv gpu_class("FLUXION_VULKAN_TUNING", "gpu");
  const char* text = R"(func @main(%0: f16[3,100,70], %1: f16[90,70], %2: f32[90]) -> (f32[3,100,90]) {
  %3 = convert %0 : f32[3,100,70]
  %4 = convert %1 : f32[90,70]
  %5 = transpose %4 {perm=[1,0]} : f32[70,90]
  %6 = broadcast %5 : f32[3,70,90]
  %7 = matmul %3, %6 : f32[3,100,90]
  %8 = broadcast %2 : f32[3,100,90]
  %9 = add %7, %8 : f32[3,100,90]
  %10 = tanh %9 : f32[3,100,90]
  return %10
})";
  for (uint32_t n : {16u, 8u}) {
    SCOPED_TRACE("fragments 16 x " + std::to_string(n) + " x 16");
    fx::vulkan::DeviceTuning tuning = cooperative_tuning(n);
    Planned p = planned(text, tuning);
    ASSERT_EQ(p.schedule.kernels.size(), 1u) << fx::kernel::print(p.program.body, p.schedule);
    ASSERT_EQ(p.schedule.kernels[0].plan.strategy, Strategy::CooperativeTiles);
    fx::vulkan::ShaderTarget target = shared_memory(49152);
    target.halves = true;
    target.cooperative_m = 16;
    target.cooperative_n = n;
    target.cooperative_k = 16;
    fx::vulkan::KernelShader s =
        fx::vulkan::emit_kernel(p.program.body, p.schedule, p.schedule.kernels[0], "kernel 0", target);
    std::vector<uint32_t> spirv = fx::vulkan::compile_glsl(s.glsl, "kernel 0");
    EXPECT_EQ(fx::vulkan::validate_spirv(spirv), "");
    EXPECT_NE(s.glsl.find("fcoopmatNV<32, gl_ScopeSubgroup, 16, " + std::to_string(n) + ">"), std::string::npos);
    EXPECT_NE(s.glsl.find("coopMatMulAddNV"), std::string::npos);
    EXPECT_NE(s.glsl.find("local_size_x = 128"), std::string::npos);
    EXPECT_EQ(s.groups, (std::array<uint32_t, 3>{2, 2, 3}));  // 90 / 64 columns, 100 / 64 rows, 3 products
  }
}

TEST(VulkanPlans, RuledCooperativeTilesRunOnlyWholeFragmentsOfTheDevice) {
  ScopedEnv gpu_class("FLUXION_VULKAN_TUNING", "gpu");
  fx::vulkan::DeviceTuning tuning = cooperative_tuning(8);
  {
    // 4 x 2 subgroups of 32 x 64 (fragments of 16 x 8), staged 16 deep.
    PlanRulesFile rules("cooperative-tiles tile=128x128x16 thread=32x64 workgroup=256\n");
    KernelPlan p = planned(half_product("f16", 300, 70, 290), tuning).schedule.kernels[0].plan;
    EXPECT_EQ(p.tile, (Tile{128, 128, 16, 32, 64}));
    EXPECT_EQ(p.workgroup, 256);
  }
  for (const char* bad : {"cooperative-tiles tile=64x64x24 thread=32x32 workgroup=128\n",  // k of 1.5 fragments
                          "cooperative-tiles tile=64x64x32 thread=32x32 workgroup=64\n",   // not a subgroup a block
                          "cooperative-tiles tile=256x256x64 thread=32x32 workgroup=2048\n"}) {
    SCOPED_TRACE(bad);
    PlanRulesFile rules(bad);
    EXPECT_THROW(planned(half_product("f16", 300, 70, 290), tuning), fx::Error);
  }
}
