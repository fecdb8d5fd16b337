// fluxion_vulkan_selftest: what a user runs to learn whether Fluxion works on their GPU. Lists
// the Vulkan devices with their capabilities and tier, runs the checks (checks.h) on the chosen
// device against the reference interpreter, prints a pass/fail table and writes a JSON report
// to send with a bug report (docs/vulkan.md, "Self-test").
//
//   fluxion_vulkan_selftest [--device <index or name>] [--json <path>] [--expectations <path>]
#include <fluxion/fluxion.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "checks.h"
#include "data/json.h"
#include "expectations.h"

namespace fx = fluxion;

namespace {

struct Outcome {
  std::string name, what, status, detail;  // status: pass, fail, expected-fail, unexpected-pass
  double seconds = 0;
};

std::string json_string(const std::string& s) { return fx::data::json::quote(s); }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : "; ") + s;
  return out;
}

std::string device_json(const fx::VulkanDeviceInfo& d) {
  const fx::VulkanCapabilities& c = d.capabilities;
  std::ostringstream j;
  auto b = [](bool v) { return v ? "true" : "false"; };
  j << "{\"index\": " << d.index << ", \"name\": " << json_string(d.name) << ", \"vendor\": " << json_string(d.vendor)
    << ", \"type\": " << json_string(d.type) << ", \"driver\": " << json_string(d.driver)
    << ", \"driver_version\": " << json_string(d.driver_version) << ", \"api_version\": " << json_string(d.api_version)
    << ", \"memory_bytes\": " << d.memory_bytes << ", \"tier\": " << json_string(d.tier)
    << ", \"capabilities\": {\"buffer_device_address\": " << b(c.buffer_device_address) << ", \"int64\": " << b(c.int64)
    << ", \"int8_storage\": " << b(c.int8_storage) << ", \"int16_storage\": " << b(c.int16_storage)
    << ", \"float64\": " << b(c.float64) << ", \"float16\": " << b(c.float16)
    << ", \"subgroup_arithmetic\": " << b(c.subgroup_arithmetic) << ", \"subgroup_size\": " << c.subgroup_size
    << ", \"timestamps\": " << b(c.timestamps) << ", \"max_workgroup_invocations\": " << c.max_workgroup_invocations
    << ", \"max_shared_memory_bytes\": " << c.max_shared_memory_bytes << "}, \"fallbacks\": [";
  for (size_t i = 0; i < d.fallbacks.size(); ++i) j << (i ? ", " : "") << json_string(d.fallbacks[i]);
  j << "], \"missing\": [";
  for (size_t i = 0; i < d.missing.size(); ++i) j << (i ? ", " : "") << json_string(d.missing[i]);
  j << "]}";
  return j.str();
}

void write_report(const std::string& path, const std::vector<fx::VulkanDeviceInfo>& devices,
                  const fx::VulkanDeviceInfo* chosen, const std::vector<Outcome>& outcomes, bool passed,
                  double seconds) {
  std::ostringstream j;
  j << "{\n  \"fluxion_version\": " << json_string(std::string(fx::version())) << ",\n  \"devices\": [";
  for (size_t i = 0; i < devices.size(); ++i) j << (i ? ",\n    " : "\n    ") << device_json(devices[i]);
  j << "\n  ],\n  \"chosen_device\": " << (chosen ? std::to_string(chosen->index) : "null") << ",\n  \"checks\": [";
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const Outcome& o = outcomes[i];
    j << (i ? ",\n    " : "\n    ") << "{\"name\": " << json_string(o.name) << ", \"status\": " << json_string(o.status)
      << ", \"seconds\": " << o.seconds << ", \"detail\": " << json_string(o.detail) << "}";
  }
  j << "\n  ],\n  \"passed\": " << (passed ? "true" : "false") << ",\n  \"seconds\": " << seconds << "\n}\n";
  // Atomically: a report is either whole or absent.
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << j.str();
    if (!out.flush()) throw fx::Error("could not write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// --expectations, else the installed file, else the source tree's.
std::string expectations_path(const std::string& given) {
  if (!given.empty()) return given;
  for (const char* p : {FLUXION_SELFTEST_EXPECTATIONS_INSTALLED, FLUXION_SELFTEST_EXPECTATIONS_SOURCE}) {
    if (std::filesystem::exists(p)) return p;
  }
  return "";
}

int usage(const char* why) {
  std::fprintf(stderr,
               "fluxion_vulkan_selftest: %s\nusage: fluxion_vulkan_selftest [--device <index or name>] [--json <path>] "
               "[--expectations <path>]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device, json = "fluxion_vulkan_selftest.json", expectations_file;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + a).c_str());
    if (a == "--device") device = argv[++i];
    else if (a == "--json") json = argv[++i];
    else if (a == "--expectations") expectations_file = argv[++i];
    else return usage(("unknown option " + a).c_str());
  }
  auto start = std::chrono::steady_clock::now();
  std::vector<fx::VulkanDeviceInfo> devices;
  const fx::VulkanDeviceInfo* chosen = nullptr;
  fx::VulkanDeviceInfo chosen_info;
  std::vector<Outcome> outcomes;
  try {
    devices = fx::vulkan_devices();
    std::printf("Fluxion %s: %zu Vulkan device(s)\n", std::string(fx::version()).c_str(), devices.size());
    for (const fx::VulkanDeviceInfo& d : devices) {
      std::printf("  %d: %s (%s, %s, driver %s %s, Vulkan %s): %s\n", d.index, d.name.c_str(), d.vendor.c_str(),
                  d.type.c_str(), d.driver.c_str(), d.driver_version.c_str(), d.api_version.c_str(), d.tier.c_str());
      if (!d.missing.empty()) std::printf("       missing: %s\n", join(d.missing).c_str());
      if (!d.fallbacks.empty()) std::printf("       fallbacks: %s\n", join(d.fallbacks).c_str());
    }
    if (!device.empty()) {
      char* end = nullptr;
      long index = std::strtol(device.c_str(), &end, 10);
      if (end && *end == '\0') fx::select_vulkan_device(static_cast<int>(index));
      else fx::select_vulkan_device(device);
    }
    chosen_info = fx::vulkan_device();
    chosen = &chosen_info;
    std::printf("running on %d: %s\n\n", chosen->index, chosen->name.c_str());
    std::string path = expectations_path(expectations_file);
    std::vector<fx::selftest::Expectation> expected = path.empty()
                                                          ? std::vector<fx::selftest::Expectation>{}
                                                          : fx::selftest::parse_expectations(read_file(path), path);
    for (const fx::selftest::Check& c : fx::selftest::checks()) {
      Outcome o{c.name, c.what, "", "", 0};
      auto t0 = std::chrono::steady_clock::now();
      try {
        o.detail = c.run();
      } catch (const std::exception& e) {
        o.detail = std::string("raised: ") + e.what();
      }
      o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const fx::selftest::Expectation* x =
          fx::selftest::expected_failure(expected, chosen->vendor, chosen->driver_version, c.name);
      if (x) {
        o.status = o.detail.empty() ? "unexpected-pass" : "expected-fail";
        o.detail += (o.detail.empty() ? "" : " ") + std::string("[listed in ") + path + ": " + x->reason + "]";
      } else {
        o.status = o.detail.empty() ? "pass" : "fail";
      }
      std::printf("%-24s %-16s %6.2f s  %s\n", o.name.c_str(), o.status.c_str(), o.seconds,
                  o.detail.empty() ? o.what.c_str() : o.detail.c_str());
      std::fflush(stdout);
      outcomes.push_back(o);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fluxion_vulkan_selftest: %s\n", e.what());
    outcomes.push_back({"setup", "opening the device", "fail", e.what(), 0});
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  bool passed = true;
  int failures = 0;
  for (const Outcome& o : outcomes) {
    if (o.status == "fail" || o.status == "unexpected-pass") {
      passed = false;
      ++failures;
    }
  }
  try {
    write_report(json, devices, chosen, outcomes, passed, seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fluxion_vulkan_selftest: the report: %s\n", e.what());
    return 1;
  }
  std::printf("\n%s: %zu checks, %d failed, %.1f s; report written to %s\n", passed ? "PASSED" : "FAILED",
              outcomes.size(), failures, seconds, json.c_str());
  return passed ? 0 : 1;
}
