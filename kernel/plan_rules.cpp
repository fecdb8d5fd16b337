#include "kernel/plan_rules.h"

#include <charconv>
#include <fstream>
#include <sstream>

#include "fluxion/error.h"
#include "support/settings.h"

namespace fluxion::kernel {
namespace {

[[noreturn]] void bad(size_t line, const std::string& text, const std::string& what) {
  detail::fail("kernel plan rules", "line " + std::to_string(line) + " '" + text + "': " + what);
}

// "64x32x8" as `count` positive numbers.
std::vector<int64_t> numbers(const std::string& value, size_t count, size_t line, const std::string& text) {
  std::vector<int64_t> out;
  size_t at = 0;
  while (at <= value.size()) {
    size_t end = value.find('x', at);
    if (end == std::string::npos) end = value.size();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(value.data() + at, value.data() + end, v);
    if (ec != std::errc() || p != value.data() + end || v <= 0) {
      bad(line, text, "'" + value + "' is not " + std::to_string(count) + " positive numbers joined by 'x'");
    }
    out.push_back(v);
    at = end + 1;
  }
  if (out.size() != count) {
    bad(line, text, "'" + value + "' is not " + std::to_string(count) + " positive numbers joined by 'x'");
  }
  return out;
}

// `line`: the kernel's line with the planner's plan, as Compiled::kernels() prints it.
bool applies(const PlanRule& rule, const Kernel& k, const std::string& line) {
  return rule.strategy == k.plan.strategy && line.find(rule.match) != std::string::npos;
}

}  // namespace

std::vector<PlanRule> parse_plan_rules(const std::string& text) {
  std::vector<PlanRule> rules;
  std::istringstream in(text);
  size_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    std::istringstream words(line);
    std::string word;
    if (!(words >> word) || word[0] == '#') continue;
    PlanRule rule;
    rule.strategy = strategy_named(word);
    while (words >> word) {
      size_t eq = word.find('=');
      if (eq == std::string::npos) bad(number, line, "'" + word + "' is not key=value");
      std::string key = word.substr(0, eq), value = word.substr(eq + 1);
      if (key == "match") {
        rule.match = value;
      } else if (key == "tile") {
        std::vector<int64_t> v = numbers(value, 3, number, line);
        rule.tile = Tile{v[0], v[1], v[2], 0, 0};
      } else if (key == "thread") {
        std::vector<int64_t> v = numbers(value, 2, number, line);
        rule.thread_m = v[0], rule.thread_n = v[1];
      } else if (key == "workgroup") {
        rule.workgroup = numbers(value, 1, number, line)[0];
      } else if (key == "row") {
        rule.row_lanes = numbers(value, 1, number, line)[0];
      } else if (key == "block") {
        rule.block_rows = numbers(value, 1, number, line)[0];
      } else {
        bad(number, line, "unknown key '" + key + "'; the keys are match, tile, thread, workgroup, row, block");
      }
    }
    rules.push_back(rule);
  }
  return rules;
}

int apply_plan_rules(const std::vector<PlanRule>& rules, const ir::Region& r, RegionSchedule& s) {
  int changed = 0;
  for_each_kernel(r, s, [&](const ir::Region& region, const RegionSchedule& schedule, Kernel& k) {
    KernelPlan before = k.plan;
    std::string line = kernel_line(region, k, static_cast<size_t>(&k - schedule.kernels.data()));
    for (const PlanRule& rule : rules) {
      if (!applies(rule, k, line)) continue;
      if (rule.tile) {
        k.plan.tile.m = rule.tile->m, k.plan.tile.n = rule.tile->n, k.plan.tile.k = rule.tile->k;
      }
      if (rule.thread_m) k.plan.tile.thread_m = *rule.thread_m, k.plan.tile.thread_n = *rule.thread_n;
      if (rule.workgroup) k.plan.workgroup = *rule.workgroup;
      if (rule.row_lanes) k.plan.row_lanes = *rule.row_lanes;
      if (rule.block_rows) k.plan.tile.m = *rule.block_rows;
    }
    changed += k.plan == before ? 0 : 1;
  });
  return changed;
}

std::string plan_rules_text() {
  std::string path = support::text(support::Setting::kernel_plans);
  if (path.empty()) return "";
  std::ifstream in(path);
  if (!in) detail::fail("kernel plan rules", "cannot read '" + path + "' (FLUXION_KERNEL_PLANS)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<PlanRule> plan_rules_from_settings() { return parse_plan_rules(plan_rules_text()); }

void plan_kernels(const ir::Region& r, RegionSchedule& s, const std::string& backend, const Planner& plan,
                  const PlanCheck& check) {
  for_each_kernel(r, s, [&](const ir::Region& region, const RegionSchedule& schedule, Kernel& k) {
    k.plan = plan(region, schedule, k);
  });
  std::vector<PlanRule> rules = plan_rules_from_settings();
  if (rules.empty() || apply_plan_rules(rules, r, s) == 0) return;
  for_each_kernel(r, s, [&](const ir::Region& region, const RegionSchedule& schedule, Kernel& k) {
    std::string needs = check(region, schedule, k);
    if (needs.empty()) return;
    size_t index = static_cast<size_t>(&k - schedule.kernels.data());
    detail::fail("kernel plan rules",
                 "the " + backend + " backend cannot run '" + kernel_line(region, k, index) + "': " + needs);
  });
}

}  // namespace fluxion::kernel
