// Capabilities, tiers and the emulation variables (docs/vulkan.md, "Capabilities"): what each
// device reports, and that the backend follows the capabilities of the device it runs on. The
// suite runs these tests on the full device and again under emulated profiles (vulkan.reduced.*,
// vulkan.mobile.*, vulkan.no_float64, vulkan.small_shared), where the other branch of each test
// runs.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "common/kernel_listing.h"
#include "common/scoped_env.h"
#include "common/test_util.h"
#include "vulkan/require_vulkan.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;
using fluxion::testing::ScopedEnv;

namespace {

bool has(const std::vector<std::string>& v, const std::string& prefix) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

TEST(VulkanCapabilities, EveryDeviceReportsATierConsistentWithItsCapabilities) {
  for (const fx::VulkanDeviceInfo& d : fx::vulkan_devices()) {
    SCOPED_TRACE(d.name);
    const fx::VulkanCapabilities& c = d.capabilities;
    EXPECT_EQ(d.usable, d.missing.empty());
    EXPECT_EQ(d.tier, !d.usable ? "unusable" : d.fallbacks.empty() ? "full" : "reduced");
    EXPECT_EQ(has(d.fallbacks, "no shaderInt64"), !c.int64);
    EXPECT_EQ(has(d.fallbacks, "no 8-bit storage"), !c.int8_storage);
    EXPECT_EQ(has(d.fallbacks, "no 16-bit storage"), !c.int16_storage);
    EXPECT_EQ(has(d.fallbacks, "no bufferDeviceAddress"), !c.buffer_device_address);
    EXPECT_EQ(has(d.missing, "bufferDeviceAddress"), !c.buffer_device_address && !c.descriptor_indexing);
    EXPECT_EQ(has(d.fallbacks, "no shaderFloat64"), !c.float64);
    EXPECT_EQ(has(d.fallbacks, "no shaderFloat16"), !c.float16);
    EXPECT_EQ(has(d.fallbacks, "no subgroup arithmetic"), !c.subgroup_arithmetic);
    EXPECT_EQ(has(d.fallbacks, "no timestamps"), !c.timestamps);
    if (d.usable) {
      EXPECT_GE(c.max_workgroup_invocations, 64u);
      EXPECT_GT(c.subgroup_size, 0u);
    }
    // lavapipe has every capability; only emulation takes one away.
    bool emulated = !env("FLUXION_VULKAN_PROFILE").empty() || !env("FLUXION_VULKAN_DISABLE").empty();
    if (d.name.find("llvmpipe") != std::string::npos && !emulated) {
      EXPECT_EQ(d.tier, "full");
    }
  }
}

TEST(VulkanCapabilities, TheReducedProfileNarrowsWhatTheDeviceReports) {
  REQUIRE_VULKAN();
  fx::VulkanDeviceInfo d = fx::vulkan_device();
  if (env("FLUXION_VULKAN_PROFILE") != "reduced")
    GTEST_SKIP() << "runs under FLUXION_VULKAN_PROFILE=reduced (vulkan.reduced.*)";
  EXPECT_FALSE(d.capabilities.int64);
  EXPECT_FALSE(d.capabilities.int8_storage);
  EXPECT_FALSE(d.capabilities.int16_storage);
  EXPECT_FALSE(d.capabilities.float16);
  EXPECT_FALSE(d.capabilities.subgroup_arithmetic);
  EXPECT_FALSE(d.capabilities.timestamps);
  EXPECT_LE(d.capabilities.max_workgroup_invocations, 128u);
  EXPECT_LE(d.capabilities.max_shared_memory_bytes, 16384u);
  EXPECT_EQ(d.tier, "reduced");
}

TEST(VulkanCapabilities, EmulationVariablesAreCheckedAndTheMobileProfileRunsOnFallbacks) {
  {
    ScopedEnv bad("FLUXION_VULKAN_DISABLE", "float64,warp_shuffles");
    try {
      if (!fx::vulkan_devices().empty()) ADD_FAILURE() << "an unknown capability was accepted";
    } catch (const fx::Error& e) {
      EXPECT_NE(std::string(e.what()).find("unknown capability 'warp_shuffles'"), std::string::npos) << e.what();
    }
  }
  {
    ScopedEnv bad("FLUXION_VULKAN_LIMITS", "shared=lots");
    try {
      if (!fx::vulkan_devices().empty()) ADD_FAILURE() << "a malformed limit was accepted";
    } catch (const fx::Error& e) {
      EXPECT_NE(std::string(e.what()).find("'shared=lots' is not a limit"), std::string::npos) << e.what();
    }
  }
  ScopedEnv mobile("FLUXION_VULKAN_PROFILE", "mobile");
  for (const fx::VulkanDeviceInfo& d : fx::vulkan_devices()) {
    SCOPED_TRACE(d.name);
    if (!d.capabilities.descriptor_indexing) continue;  // no way to address memory without BDA
    EXPECT_EQ(d.tier, "reduced");
    EXPECT_TRUE(d.missing.empty());
    for (const char* f : {"no bufferDeviceAddress", "no shaderInt64", "no 8-bit storage", "no shaderFloat64",
                          "no subgroup arithmetic", "no timestamps"}) {
      EXPECT_TRUE(has(d.fallbacks, f)) << f;
    }
    EXPECT_LE(d.capabilities.max_workgroup_invocations, 128u);
    EXPECT_LE(d.capabilities.max_shared_memory_bytes, 16384u);
  }
  // Too few descriptors to address memory through them.
  ScopedEnv few("FLUXION_VULKAN_LIMITS", "storage_buffers=3");
  for (const fx::VulkanDeviceInfo& d : fx::vulkan_devices()) {
    SCOPED_TRACE(d.name);
    EXPECT_EQ(d.tier, "unusable");
    EXPECT_TRUE(has(d.missing, "bufferDeviceAddress, or 4 storage-buffer descriptors"));
  }
}

TEST(VulkanCapabilities, ReductionsUseSubgroupsOnlyWhereTheDeviceHasSubgroupArithmetic) {
  REQUIRE_VULKAN();
  auto f = fx::jit([](Tensor x) { return fx::sum(fx::tanh(x), {1}); }, fx::Backend::Vulkan);
  Array x(std::vector<float>(8 * 4096, 0.25f), {8, 4096});
  std::vector<std::string> strategies = fx::testing::kernel_strategies(f.lower(x).kernels());
  bool subgroups = std::count(strategies.begin(), strategies.end(), "loop[subgroup-rows]") > 0;
  EXPECT_EQ(subgroups, fx::vulkan_device().capabilities.subgroup_arithmetic) << f.lower(x).kernels();
  std::vector<double> got = f(x).to_doubles();
  ASSERT_EQ(got.size(), 8u);
  for (double v : got) EXPECT_NEAR(v, 4096 * std::tanh(0.25), 1e-3);
}

TEST(VulkanCapabilities, Float64ProgramsRunOnlyWithShaderFloat64) {
  REQUIRE_VULKAN();
  fx::VulkanDeviceInfo d = fx::vulkan_device();
  if (env("FLUXION_VULKAN_DISABLE").find("float64") != std::string::npos) {
    EXPECT_FALSE(d.capabilities.float64);
  }
  auto f = fx::jit([](Tensor x) { return fx::exp(x) * 2.0; }, fx::Backend::Vulkan);
  Array x(std::vector<double>{0, 1, -1}, {3});
  if (d.capabilities.float64) {
    std::vector<double> got = f(x).to_doubles();
    EXPECT_NEAR(got[1], 2 * std::exp(1.0), 1e-12);
    return;
  }
  try {
    f(x);
    ADD_FAILURE() << "an f64 program ran on a device without shaderFloat64";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("shaderFloat64"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(d.name), std::string::npos) << e.what();
  }
  // f32 programs still run (under validation, without shaderFloat64 enabled on the device).
  auto g = fx::jit([](Tensor x) { return fx::exp(x) * 2.0; }, fx::Backend::Vulkan);
  std::vector<double> got = g(Array(std::vector<float>{0, 1, -1}, {3})).to_doubles();
  EXPECT_NEAR(got[1], 2 * std::exp(1.0), 1e-5);
}

TEST(VulkanCapabilities, AKernelNeedingMoreWorkgroupMemoryThanTheDeviceHasIsRefused) {
  REQUIRE_VULKAN();
  // A tiled f64 product stages two 16 x 33 tiles of doubles: 8448 bytes of workgroup memory.
  auto f = fx::jit([](Tensor a, Tensor b) { return fx::matmul(a, b); }, fx::Backend::Vulkan);
  std::vector<double> ones(128 * 128, 1.0);
  Array a(ones, {128, 128}), b(ones, {128, 128});
  const fx::VulkanCapabilities& c = fx::vulkan_device().capabilities;
  if (!c.float64) GTEST_SKIP() << "needs shaderFloat64";
  if (c.max_shared_memory_bytes >= 8448) {
    EXPECT_EQ(f(a, b).to_doubles()[0], 128.0);
    return;
  }
  try {
    f(a, b);
    ADD_FAILURE() << "a kernel beyond the workgroup memory limit ran";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("8448 bytes of workgroup memory"), std::string::npos) << e.what();
  }
}

TEST(VulkanCapabilities, CooperativeMatricesAreReportedOnlyWhenAskedForAndKeptWholeOrNotAtAll) {
  // Off by default: no device reports them. Asked for, a device reports whole f16 fragments (16
  // rows, 16 deep) with 16-bit storage, or none (lavapipe has no VK_NV_cooperative_matrix); the
  // emulation variables take them away again, and a program then plans no cooperative tiles.
  auto check = [](bool may_report) {
    for (const fx::VulkanDeviceInfo& d : fx::vulkan_devices()) {
      SCOPED_TRACE(d.name);
      const fx::VulkanCapabilities& c = d.capabilities;
      if (!may_report) {
        EXPECT_FALSE(c.cooperative_matrix);
      }
      if (!c.cooperative_matrix) {
        EXPECT_EQ(c.cooperative_m + c.cooperative_n + c.cooperative_k, 0u);
        continue;
      }
      EXPECT_TRUE(c.int16_storage);
      EXPECT_EQ(c.cooperative_m, 16u);
      EXPECT_EQ(c.cooperative_k, 16u);
      EXPECT_GT(c.cooperative_n, 0u);
      if (d.name.find("llvmpipe") != std::string::npos) ADD_FAILURE() << "lavapipe has no cooperative matrices";
    }
  };
  check(false);
  ScopedEnv on("FLUXION_VULKAN_COOPERATIVE_MATRIX", "on");
  check(true);
  {
    ScopedEnv off("FLUXION_VULKAN_DISABLE", "cooperative_matrix");
    check(false);
  }
  ScopedEnv no_halves("FLUXION_VULKAN_DISABLE", "int16_storage");
  check(false);
}
