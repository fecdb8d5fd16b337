// The barrier audit (backends/vulkan/barrier_audit.h): on in this Debug suite for every Vulkan
// test, and it reports a barrier left out on purpose, between kernels and between the
// iterations of a loop recorded dispatch by dispatch.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <string>

#include "backends/vulkan/barrier_audit.h"
#include "common/scoped_env.h"
#include "common/test_util.h"
#include "vulkan/require_vulkan.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;
using fluxion::testing::ScopedEnv;

namespace {

// The Error the audit raises when `f` is compiled for `args` with barrier `dropped` left out;
// empty when compiling succeeds.
template <class F, class... Args>
std::string audit_error(const char* dropped, F f, const Args&... args) {
  ScopedEnv drop("FLUXION_VULKAN_DROP_BARRIER", dropped);
  try {
    fx::jit(f, fx::Backend::Vulkan)(args...);
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "";
}

Tensor two_kernels(Tensor x) { return fx::sum(fx::tanh(fx::matmul(x, x)), {1}) + fx::max(x); }

}  // namespace

TEST(VulkanBarrierAudit, IsOnInDebugBuilds) {
#ifdef NDEBUG
  GTEST_SKIP() << "a release build audits only under FLUXION_VULKAN_AUDIT_BARRIERS=1";
#else
  if (std::getenv("FLUXION_VULKAN_AUDIT_BARRIERS")) GTEST_SKIP() << "FLUXION_VULKAN_AUDIT_BARRIERS is set";
  EXPECT_TRUE(fx::vulkan::barrier_audit_enabled());
#endif
}

TEST(VulkanBarrierAudit, ReportsAMissingBarrierBetweenKernels) {
  REQUIRE_VULKAN();
  ScopedEnv audit("FLUXION_VULKAN_AUDIT_BARRIERS", "1");
  Array x(std::vector<float>(64, 0.5f), {8, 8});
  std::string e = audit_error("0", two_kernels, x);
  EXPECT_NE(e.find("no barrier between dispatch"), std::string::npos) << e;
  EXPECT_NE(e.find("read after write"), std::string::npos) << e;
  // The same program with its barriers is clean, and so it is without the audit (lavapipe runs
  // dispatches in order, so the results would even be right: only the audit sees it).
  EXPECT_EQ(audit_error("-1", two_kernels, x), "");
  ScopedEnv off("FLUXION_VULKAN_AUDIT_BARRIERS", "0");
  EXPECT_EQ(audit_error("0", two_kernels, x), "");
}

TEST(VulkanBarrierAudit, ReportsAMissingBarrierBetweenLoopIterations) {
  REQUIRE_VULKAN();
  ScopedEnv audit("FLUXION_VULKAN_AUDIT_BARRIERS", "1");
  ScopedEnv unrolled("FLUXION_VULKAN_LOOP_KERNELS", "0");
  auto loop = [](Tensor w, Tensor x) {
    return fx::fori_loop(
        0, 6, [&](Tensor, Tensor s) { return fx::tanh(fx::matmul(w, s)); }, x);
  };
  Array w(std::vector<float>(16, 0.25f), {4, 4}), x(std::vector<float>(4, 1.0f), {4, 1});
  // Barrier 4 lies inside the loop, between one iteration's writes and the next one's reads.
  std::string e = audit_error("4", loop, w, x);
  EXPECT_NE(e.find("no barrier between dispatch"), std::string::npos) << e;
  EXPECT_EQ(audit_error("-1", loop, w, x), "");
}
