// Known deviations of one vendor's driver (expectations.txt): a check expected to fail on
// devices of `vendor` whose driver version lies in [min, max). A listed check that passes is an
// unexpected pass, which fails the self-test too, so the list cannot outlive the bug.
#pragma once

#include <string>
#include <vector>

namespace fluxion::selftest {

struct Expectation {
  std::string vendor;       // as VulkanDeviceInfo::vendor: "nvidia", "amd", "intel", ...
  std::string min_version;  // driver version, inclusive; "" for any
  std::string max_version;  // exclusive; "" for any
  std::string check;        // a Check::name
  std::string reason;
};

// Lines `vendor min max check reason...`, '#' comments, '*' for an open version bound. Raises
// Error naming the line of a malformed one.
std::vector<Expectation> parse_expectations(const std::string& text, const std::string& source);

// The expectation for `check` on this device, or null.
const Expectation* expected_failure(const std::vector<Expectation>& list, const std::string& vendor,
                                    const std::string& driver_version, const std::string& check);

// Dotted versions compared number by number ("535.104.5" < "535.113").
bool version_less(const std::string& a, const std::string& b);

}  // namespace fluxion::selftest
