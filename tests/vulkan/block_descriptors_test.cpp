// Addressing memory through descriptors on a device without buffer device addresses
// (docs/vulkan.md, "Capabilities"). These tests run in every Vulkan run; they test the
// descriptor path under the profiles that take bufferDeviceAddress away (vulkan.mobile.*,
// vulkan.descriptors.*, and vulkan.few_descriptors with only four descriptors).
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "vulkan/require_vulkan.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;

namespace {

constexpr int64_t kElements = int64_t{4} << 20;  // 16 MiB of f32: four fill a 64 MiB block

bool addressed_by_descriptors() { return !fx::vulkan_device().capabilities.buffer_device_address; }

void expect_samples(const Array& a, float want) {
  std::vector<float> v = a.to_vector<float>();
  ASSERT_EQ(static_cast<int64_t>(v.size()), kElements);
  for (int64_t i : {int64_t{0}, kElements / 3, kElements - 1})
    EXPECT_EQ(v[static_cast<size_t>(i)], want) << "element " << i;
}

}  // namespace

TEST(VulkanMemory, BuffersInBlocksAddedAfterAProgramWasRecordedAreReachable) {
  REQUIRE_VULKAN();
  auto f = fx::jit([](Tensor x) { return x * 2.0 + 1.0; }, fx::Backend::Vulkan);
  Array x(std::vector<float>(static_cast<size_t>(kElements), 1.0f), {kElements});
  // The first call records the command buffer; the results kept alive then fill the device
  // pool's first block, so later results land in blocks added after the recording, which a
  // descriptor set made before them does not describe.
  std::vector<Array> results;
  for (int i = 0; i < 7; ++i) results.push_back(f(x));
  for (const Array& r : results) {
    EXPECT_TRUE(r.on_device());
    expect_samples(r, 3.0f);
  }
  // A result in a new block read back in place as the input of the same program.
  expect_samples(f(results.back()), 7.0f);
}

TEST(VulkanMemory, RunningOutOfDescriptorSlotsIsAnErrorThatKeepsEarlierResults) {
  REQUIRE_VULKAN();
  const char* limits = std::getenv("FLUXION_VULKAN_LIMITS");
  if (!addressed_by_descriptors() || !limits || std::string(limits).find("storage_buffers=4") == std::string::npos) {
    GTEST_SKIP() << "runs without bufferDeviceAddress and with FLUXION_VULKAN_LIMITS=storage_buffers=4 "
                    "(vulkan.few_descriptors)";
  }
  auto f = fx::jit([](Tensor x) { return x + 1.0; }, fx::Backend::Vulkan);
  Array x(std::vector<float>(static_cast<size_t>(kElements), 1.0f), {kElements});
  std::vector<Array> results;
  try {
    for (int i = 0; i < 32; ++i) results.push_back(f(x));
    FAIL() << "32 results of 16 MiB fit in four descriptors of 64 MiB blocks";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of descriptor slots"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4 storage-buffer descriptors"), std::string::npos) << e.what();
  }
  ASSERT_FALSE(results.empty());
  for (const Array& r : results) expect_samples(r, 2.0f);
  // Freed results make room again.
  results.resize(1);
  expect_samples(f(results[0]), 3.0f);
}
