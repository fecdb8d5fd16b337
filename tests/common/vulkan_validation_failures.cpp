// Linked into every test executable: under FLUXION_VULKAN_VALIDATION=1, a message of the Vulkan
// validation layer fails the test whose call caused it (docs/testing.md).
#include <gtest/gtest.h>

#include <string>

#include "common/vulkan_validation.h"
#include "runtime/vulkan/validation.h"

namespace fluxion::testing {

void fail_tests_on_validation_messages() {
  vulkan::set_validation_handler(
      [](const std::string& message) { ADD_FAILURE() << "Vulkan validation layer: " << message; });
}

namespace {
const bool installed = (fail_tests_on_validation_messages(), true);
}  // namespace

}  // namespace fluxion::testing
