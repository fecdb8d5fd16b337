// fluxion_vulkan_selftest's checks and expectations (tools/vulkan_selftest): every check passes
// on this machine's device (the ctest entry vulkan.selftest runs the program itself), and the
// expectations file is read as documented, an unexpected pass included.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <fstream>
#include <sstream>

#include "checks.h"
#include "expectations.h"
#include "vulkan/require_vulkan.h"

namespace fx = fluxion;
using fluxion::selftest::Expectation;

TEST(VulkanSelftest, EveryCheckPassesOnThisDevice) {
  REQUIRE_VULKAN();
  std::ifstream in(FLUXION_SELFTEST_EXPECTATIONS_SOURCE);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<Expectation> expected = fluxion::selftest::parse_expectations(text.str(), "expectations.txt");
  fx::VulkanDeviceInfo d = fx::vulkan_device();
  for (const fluxion::selftest::Check& c : fluxion::selftest::checks()) {
    SCOPED_TRACE(c.name);
    std::string detail = c.run();
    bool listed = fluxion::selftest::expected_failure(expected, d.vendor, d.driver_version, c.name) != nullptr;
    // A listed check must fail (else the line is stale); any other must pass.
    EXPECT_EQ(detail.empty(), !listed) << (detail.empty() ? "passes, but expectations.txt lists it" : detail);
  }
}

TEST(VulkanSelftest, ExpectationsMatchVendorVersionRangeAndCheck) {
  std::vector<Expectation> list = fluxion::selftest::parse_expectations(
      "# comment\n"
      "nvidia 535.0 550.0 ops.reductions  subgroup max wrong  # trailing comment\n"
      "\n"
      "mesa * 23.1 loops.fori  old llvmpipe\n",
      "test");
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].reason, "subgroup max wrong");
  using fluxion::selftest::expected_failure;
  EXPECT_NE(expected_failure(list, "nvidia", "535.104.5.0", "ops.reductions"), nullptr);
  EXPECT_EQ(expected_failure(list, "nvidia", "550.0", "ops.reductions"), nullptr);  // max is exclusive
  EXPECT_EQ(expected_failure(list, "nvidia", "530.41", "ops.reductions"), nullptr);
  EXPECT_EQ(expected_failure(list, "amd", "535.1", "ops.reductions"), nullptr);
  EXPECT_EQ(expected_failure(list, "nvidia", "540.0", "ops.matmul"), nullptr);
  EXPECT_NE(expected_failure(list, "mesa", "22.3.6", "loops.fori"), nullptr);
  EXPECT_EQ(expected_failure(list, "mesa", "23.1.0", "loops.fori"), nullptr);
  EXPECT_TRUE(fluxion::selftest::version_less("535.9", "535.10"));
  EXPECT_TRUE(fluxion::selftest::version_less("535", "535.1"));
  EXPECT_FALSE(fluxion::selftest::version_less("535.1", "535.1"));
  EXPECT_THROW(fluxion::selftest::parse_expectations("nvidia 535.0 ops.reductions\n", "test"), fx::Error);
}
