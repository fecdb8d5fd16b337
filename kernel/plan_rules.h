// Plan rules: overrides of the planners' choices, for tuning experiments (docs/kernels.md,
// "Plans"). A rule names a strategy, optionally a text that the kernel's line must contain, and
// the numbers to use instead of the planner's:
//
//   tiles tile=64x64x16 thread=8x8 workgroup=64
//   workgroup-rows match=[4096,4096] row=256 workgroup=256
//   tiles match=matmul tile=8x32x128
//
// Keys: tile=MxNxK, thread=MxN, workgroup=N, row=N (a reduction's lanes per row), block=N (a
// scatter's rows per block). Each backend checks the result against what its code can do and
// raises Error for a plan it cannot run. Rules apply in order; a later one wins.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "kernel/kernel_ir.h"

namespace fluxion::kernel {

struct PlanRule {
  Strategy strategy = Strategy::Unplanned;
  std::string match;  // a text the kernel's line (kernel_line, with the planner's plan) must contain
  std::optional<Tile> tile;
  std::optional<int64_t> thread_m, thread_n, workgroup, row_lanes, block_rows;
};

// The rules of `text`, one per line; blank lines and lines starting with '#' are skipped.
// Raises Error naming the line for an unknown strategy or key, or a malformed number.
std::vector<PlanRule> parse_plan_rules(const std::string& text);

// Applies the rules to every kernel of the schedule and of its loop bodies; returns how many
// kernels a rule changed.
int apply_plan_rules(const std::vector<PlanRule>& rules, const ir::Region& r, RegionSchedule& s);

// A backend's planner, and its check of a plan that rules changed: "" when its code can run the
// plan, else what the plan needs.
using Planner = std::function<KernelPlan(const ir::Region&, const RegionSchedule&, const Kernel&)>;
using PlanCheck = std::function<std::string(const ir::Region&, const RegionSchedule&, const Kernel&)>;

// Plans every kernel of the schedule and of its loop bodies with `plan`, then applies the rules
// of FLUXION_KERNEL_PLANS; raises Error naming the backend, the kernel and what its plan needs
// when `check` refuses a plan the rules changed.
void plan_kernels(const ir::Region& r, RegionSchedule& s, const std::string& backend, const Planner& plan,
                  const PlanCheck& check);

// The text of the file FLUXION_KERNEL_PLANS names (read at every compile), "" when it is unset;
// raises Error when the file cannot be read. Part of the in-process compile cache's key.
std::string plan_rules_text();
// The rules of that text; raises Error for a malformed rule.
std::vector<PlanRule> plan_rules_from_settings();

}  // namespace fluxion::kernel
