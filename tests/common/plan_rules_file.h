// A file of kernel plan rules (kernel/plan_rules.h) in the test's temporary folder, named by
// FLUXION_KERNEL_PLANS while it lives. Named for the running test, since ctest runs tests of
// several executables at once in one temporary folder.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/scoped_env.h"

namespace fluxion::testing {

class PlanRulesFile {
 public:
  explicit PlanRulesFile(const std::string& rules)
      : path_(::testing::TempDir() + "fluxion_plan_rules_" + test_name() + ".txt"),
        env_("FLUXION_KERNEL_PLANS", path_.c_str()) {
    std::ofstream(path_) << rules;
  }
  ~PlanRulesFile() { std::filesystem::remove(path_); }
  PlanRulesFile(const PlanRulesFile&) = delete;
  PlanRulesFile& operator=(const PlanRulesFile&) = delete;

 private:
  static std::string test_name() {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    return t ? std::string(t->test_suite_name()) + "_" + t->name() : "none";
  }
  std::string path_;
  ScopedEnv env_;
};

}  // namespace fluxion::testing
