// fluxion/version.h: the version string is made of the three numbers, and the umbrella header
// brings it in (CMakeLists.txt reads the same numbers into project(VERSION)).
#include <string>

#include <gtest/gtest.h>

#include "fluxion/fluxion.h"

namespace {

TEST(Version, StringIsTheNumbers) {
  const std::string numbers = std::to_string(FLUXION_VERSION_MAJOR) + "." + std::to_string(FLUXION_VERSION_MINOR) +
                              "." + std::to_string(FLUXION_VERSION_PATCH);
  EXPECT_EQ(std::string(FLUXION_VERSION_STRING), numbers);
  EXPECT_EQ(std::string(fluxion::version()), numbers);
  static_assert(fluxion::version() == FLUXION_VERSION_STRING);
}

}  // namespace
