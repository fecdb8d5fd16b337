// Fluxion's version: the one place it is written. The top-level CMakeLists.txt reads the three
// numbers below into project(VERSION ...), so the package config (find_package(fluxion 0.1)),
// this header and the library cannot disagree. CHANGELOG.md lists what each version holds.
#pragma once

#include <string_view>

// Changes that break the API raise MINOR while MAJOR is 0 (and MAJOR after 1.0).
#define FLUXION_VERSION_MAJOR 0
#define FLUXION_VERSION_MINOR 1
#define FLUXION_VERSION_PATCH 0

#define FLUXION_VERSION_STRINGIZE_(x) #x
#define FLUXION_VERSION_STRINGIZE(x) FLUXION_VERSION_STRINGIZE_(x)
// "MAJOR.MINOR.PATCH", built from the three numbers above.
#define FLUXION_VERSION_STRING                     \
  FLUXION_VERSION_STRINGIZE(FLUXION_VERSION_MAJOR) \
  "." FLUXION_VERSION_STRINGIZE(FLUXION_VERSION_MINOR) "." FLUXION_VERSION_STRINGIZE(FLUXION_VERSION_PATCH)

namespace fluxion {

// The version of the headers a program was compiled against, as "MAJOR.MINOR.PATCH"
// (compare versions with the FLUXION_VERSION_* numbers).
constexpr std::string_view version() { return FLUXION_VERSION_STRING; }

}  // namespace fluxion
