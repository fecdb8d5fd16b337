// Exported Vulkan programs: the SPIR-V and the recorded dispatches a file holds run on the device
// bitwise like the program compiled in this process, with no shader compiled; a device whose
// shader capabilities differ is refused by name, and load_or_compile compiles the IR instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/artifact_programs.h"
#include "common/scoped_env.h"
#include "fluxion/error.h"
#include "runtime/artifact.h"

namespace fx = fluxion;
using namespace fluxion::testing;

namespace {

class VulkanArtifact : public ::testing::Test {
 protected:
  void SetUp() override {
    auto backends = fx::available_backends();
    if (std::find(backends.begin(), backends.end(), fx::Backend::Vulkan) == backends.end())
      GTEST_SKIP() << "no Vulkan device";
  }
};

void expect_same_results(const fx::Compiled& a, const fx::Compiled& b, uint32_t seed) {
  std::vector<fx::Array> in = inputs_of(a, seed);
  std::vector<fx::Array> got = b.run(in), want = a.run(in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(bitwise_equal(got[k], want[k])) << "result " << k;
}

TEST_F(VulkanArtifact, LoadedProgramReplaysTheRecordingBitwise) {
  fx::Compiled c = training_step(fx::Backend::Vulkan);
  std::string p = temp_path("vulkan_step.fxa");
  c.save(p);
  fx::reset_counters();
  fx::Compiled loaded = fx::load(p);
  EXPECT_EQ(loaded.backend(), fx::Backend::Vulkan);
  EXPECT_EQ(loaded.kernels(), c.kernels());
  expect_same_results(c, loaded, 51);
  fx::RuntimeCounters n = fx::counters();
  EXPECT_EQ(n.traces, 0u);
  EXPECT_EQ(n.compiles, 0u);
  EXPECT_EQ(n.loads, 1u);
  std::string again = temp_path("vulkan_step_again.fxa");
  loaded.save(again);
  EXPECT_EQ(read(again), read(p));
  std::filesystem::remove(p);
  std::filesystem::remove(again);
}

// A scan run as one loop kernel, and an unbounded while loop whose recorded iterations the
// exporting program grew to what its call needed: the loaded program replays both.
TEST_F(VulkanArtifact, LoopsRunFromTheRecording) {
  auto f = [](fx::Tensor x, fx::Tensor w) {
    auto [h, ys] = fx::scan(
        [&](fx::Tensor c, fx::Tensor xi) {
          fx::Tensor n = fx::tanh(fx::matmul(w, c) + xi);
          return std::make_pair(n, n);
        },
        fx::zeros({4}), x);
    fx::Tensor halvings = fx::while_loop([](fx::Tensor v) { return fx::sum(fx::abs(v)) > 1e-6; },
                                         [](fx::Tensor v) { return v * 0.5f; }, fx::sum(ys * ys) + 1e3f);
    return std::vector<fx::Tensor>{h, ys, halvings};
  };
  fx::Compiled c = fx::jit(f, fx::Backend::Vulkan)
                       .lower(make(fx::f32, random_doubles(12 * 4, -1, 1, 61), {12, 4}),
                              make(fx::f32, random_doubles(16, -1, 1, 62), {4, 4}));
  std::vector<fx::Array> in = inputs_of(c, 63);
  c.run(in);  // the while loop needs more than its first recorded iterations: recorded again
  std::string p = temp_path("vulkan_loops.fxa");
  c.save(p);
  fx::Compiled loaded = fx::load(p);
  std::vector<fx::Array> got = loaded.run(in), want = c.run(in);
  for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(bitwise_equal(got[k], want[k])) << "result " << k;
  std::filesystem::remove(p);
}

// A scatter sorted by row (the gpu class's plan for many indices): the loaded program replays
// its sort's dispatch and its sums' with the same scratch, bitwise.
TEST_F(VulkanArtifact, SortedScattersRunFromTheRecording) {
  ScopedEnv tuning("FLUXION_VULKAN_TUNING", "gpu");
  auto f = [](fx::Tensor u, fx::Tensor i) { return fx::scatter_add(u, i, 70); };
  std::vector<double> ids = random_doubles(3000, -3, 73, 64);
  for (double& v : ids) v = std::floor(v);
  fx::Array u = make(fx::f32, random_doubles(3000 * 5, -1, 1, 65), {3000, 5}), i = make(fx::i32, ids, {3000});
  fx::Compiled c = fx::jit(f, fx::Backend::Vulkan).lower(u, i);
  ASSERT_NE(c.kernels().find("scatter[sorted-rows]"), std::string::npos) << c.kernels();
  std::string p = temp_path("vulkan_sorted_scatter.fxa");
  c.save(p);
  fx::Compiled loaded = fx::load(p);
  std::vector<fx::Array> got = loaded.run({u, i}), want = c.run({u, i});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(bitwise_equal(got[0], want[0]));
  std::filesystem::remove(p);
}

// A bf16 and f16 program: the file says its shaders have 16-bit values (they need 16-bit
// storage where the exporting device had it), and the loaded program replays it bitwise.
TEST_F(VulkanArtifact, HalfPrecisionProgramsReplayBitwise) {
  auto f = [](fx::Tensor x, fx::Tensor w) {
    fx::Tensor h = fx::tanh(fx::matmul(fx::cast(x, fx::bf16), fx::cast(w, fx::bf16)));
    return std::vector<fx::Tensor>{h, fx::cast(h, fx::f16) * 3.0f + 0.1f};
  };
  fx::Compiled c = fx::jit(f, fx::Backend::Vulkan)
                       .lower(make(fx::f32, random_doubles(6 * 5, -1, 1, 81), {6, 5}),
                              make(fx::f32, random_doubles(5 * 7, -1, 1, 82), {5, 7}));
  std::string p = temp_path("vulkan_halves.fxa");
  c.save(p);
  EXPECT_TRUE(fx::runtime::decode_artifact(read(p), p).vulkan.target.halves);
  expect_same_results(c, fx::load(p), 83);
  std::filesystem::remove(p);
}

TEST_F(VulkanArtifact, ADeviceWithOtherShaderCapabilitiesIsRefused) {
  fx::Compiled c = training_step(fx::Backend::Vulkan);
  std::string p = temp_path("vulkan_other.fxa");
  c.save(p);
  fx::runtime::Artifact a = fx::runtime::decode_artifact(read(p), p);
  a.vulkan.target.descriptor_slots += 7;
  write(p, fx::runtime::encode_artifact(a));
  try {
    fx::load(p);
    ADD_FAILURE() << "loaded shaders for another way of addressing memory";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("memory addressed through the same number of descriptors"), std::string::npos)
        << e.what();
  }
  expect_same_results(c, fx::load_or_compile(p), 71);
  // Shaders multiplying on cooperative matrices of a fragment shape this device lacks (the
  // shape is written and read back).
  c.save(p);
  a = fx::runtime::decode_artifact(read(p), p);
  a.vulkan.target.cooperative_m = 16;
  a.vulkan.target.cooperative_n = 8;
  a.vulkan.target.cooperative_k = 16;
  write(p, fx::runtime::encode_artifact(a));
  EXPECT_EQ(fx::runtime::decode_artifact(read(p), p).vulkan.target.cooperative_n, 8u);
  std::string refused = fx::testing::error_message([&] { fx::load(p); });
  EXPECT_NE(refused.find("cooperative matrices of the same fragment shape"), std::string::npos) << refused;
  // Shaders doing f16 arithmetic (products summing in f16): written and read back, refused
  // where the device has none (the profiles without float16).
  c.save(p);
  a = fx::runtime::decode_artifact(read(p), p);
  EXPECT_FALSE(a.vulkan.target.float16);  // the training step is f32
  a.vulkan.target.float16 = true;
  write(p, fx::runtime::encode_artifact(a));
  EXPECT_TRUE(fx::runtime::decode_artifact(read(p), p).vulkan.target.float16);
  if (fx::vulkan_device().capabilities.float16) {
    expect_same_results(c, fx::load(p), 72);
  } else {
    refused = fx::testing::error_message([&] { fx::load(p); });
    EXPECT_NE(refused.find("16-bit float arithmetic in shaders"), std::string::npos) << refused;
  }
  std::filesystem::remove(p);
}

// A product summing in f16 needs f16 arithmetic where it is loaded, and its artifact says so;
// it replays bit for bit.
TEST_F(VulkanArtifact, AProductSummingInF16RecordsThatItNeedsF16Arithmetic) {
  auto f = fx::jit(
      [](fx::Tensor a, fx::Tensor b) {
        fx::F16Sums allow;
        return fx::tanh(fx::matmul(a, b));
      },
      fx::Backend::Vulkan);
  fx::Array a(fx::DType::f16, {40, 50}), b(fx::DType::f16, {50, 60});
  fx::Compiled c = f.lower(a, b);
  fx::VulkanCapabilities caps = fx::vulkan_device().capabilities;
  bool in_f16 = caps.float16 && !caps.cooperative_matrix;
  EXPECT_EQ(c.kernels().find("f16 sums") != std::string::npos, in_f16) << c.kernels();
  std::string p = temp_path("vulkan_f16_sums.fxa");
  c.save(p);
  EXPECT_EQ(fx::runtime::decode_artifact(read(p), p).vulkan.target.float16, in_f16);
  expect_same_results(c, fx::load(p), 73);
  std::filesystem::remove(p);
}

TEST_F(VulkanArtifact, ADamagedRecordingIsRefused) {
  fx::Compiled c = training_step(fx::Backend::Vulkan);
  std::string p = temp_path("vulkan_damaged.fxa");
  c.save(p);
  fx::runtime::Artifact a = fx::runtime::decode_artifact(read(p), p);
  a.vulkan.dispatch_shaders[0] = static_cast<uint32_t>(a.vulkan.shaders.size());
  write(p, fx::runtime::encode_artifact(a));
  try {
    fx::load(p);
    ADD_FAILURE() << "loaded a dispatch of a shader that does not exist";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("a dispatch names shader"), std::string::npos) << e.what();
  }
  std::filesystem::remove(p);
}

}  // namespace
