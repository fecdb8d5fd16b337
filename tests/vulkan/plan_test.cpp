// The Vulkan backend's kernel plans: chosen from a device's tuning before any GLSL is generated,
// and rendered as given (the shader's workgroup size, tiles and row lanes come from the plan).
// The planner and the shaders' text need no device; the listing test runs on the machine's.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fluxion/fluxion.h>

#include "backends/vulkan/glsl.h"
#include "backends/vulkan/plan.h"
#include "backends/vulkan/shader.h"
#include "common/kernel_listing.h"
#include "common/plan_rules_file.h"
#include "common/test_util.h"
#include "ir/ir.h"
#include "kernel/kernel_ir.h"
#include "vulkan/require_vulkan.h"

namespace fx = fluxion;
using fx::kernel::KernelPlan;
using fx::testing::PlanRulesFile;
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
  p.schedule = fx::kernel::schedule(p.program.body, true, fx::vulkan::fusion_options());
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
  // A wider workgroup: rows of 1000 take 256 invocations.
  tuning.workgroup = 256;
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
  tuning.workgroup = 128;
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

}  // namespace
