// Skips a test on a machine without a usable Vulkan device (the suite then covers the other
// backends only).
#pragma once

#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <algorithm>

namespace fluxion::testing {

inline bool have_vulkan() {
  auto b = available_backends();
  return std::find(b.begin(), b.end(), Backend::Vulkan) != b.end();
}

}  // namespace fluxion::testing

#define REQUIRE_VULKAN() \
  if (!::fluxion::testing::have_vulkan()) GTEST_SKIP() << "no usable Vulkan device on this machine"
