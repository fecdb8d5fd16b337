// The checks of fluxion_vulkan_selftest: a representative subset of the test suite (ops,
// derivatives, loops, models, profiling, memory reuse), each run on the Vulkan device and
// compared with the reference interpreter. Public API only, so that the program shows what a
// user's own code would see on their GPU.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace fluxion::selftest {

struct Check {
  std::string name;  // "area.what", e.g. "ops.reductions"
  std::string what;  // one line for the table
  // Runs the check: "" when it passes, else what differed. An Error or exception it throws is
  // a failure too.
  std::function<std::string()> run;
};

std::vector<Check> checks();

}  // namespace fluxion::selftest
