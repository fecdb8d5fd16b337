#include "kernel/plan.h"

#include <iterator>
#include <sstream>

#include "fluxion/error.h"

namespace fluxion::kernel {

namespace {
constexpr const char* kStrategyNames[] = {
#define FLUXION_STRATEGY_NAME(name, text) text,
    FLUXION_STRATEGIES(FLUXION_STRATEGY_NAME)
#undef FLUXION_STRATEGY_NAME
};
}  // namespace

const char* strategy_name(Strategy s) { return kStrategyNames[static_cast<size_t>(s)]; }

Strategy strategy_named(std::string_view name) {
  for (size_t i = 1; i < std::size(kStrategyNames); ++i) {
    if (name == kStrategyNames[i]) return static_cast<Strategy>(i);
  }
  std::string known;
  for (size_t i = 1; i < std::size(kStrategyNames); ++i) known += std::string(i > 1 ? ", " : "") + kStrategyNames[i];
  detail::fail("kernel plan", "unknown strategy '" + std::string(name) + "'; the strategies are " + known);
}

std::string plan_details(const KernelPlan& p) {
  std::ostringstream out;
  auto word = [&](const std::string& w) { out << (out.tellp() > 0 ? " " : "") << w; };
  const Tile& t = p.tile;
  if (t.m > 0 && t.k > 0) {
    word("tile " + std::to_string(t.m) + "x" + std::to_string(t.n) + "x" + std::to_string(t.k));
  } else if (t.m > 0) {
    word("block " + std::to_string(t.m));
  }
  if (t.thread_m > 0) word("thread " + std::to_string(t.thread_m) + "x" + std::to_string(t.thread_n));
  if (p.vector_lanes > 0) word("lanes " + std::to_string(p.vector_lanes));
  if (p.split_columns) word("split columns");
  if (p.whole_epilogue) word("whole epilogue");
  if (p.shared_pack) word("shared pack");
  if (p.f16_sums) word("f16 sums");
  if (p.row_lanes > 0) word("row " + std::to_string(p.row_lanes));
  if (p.workgroup > 0) word("workgroup " + std::to_string(p.workgroup));
  return out.str();
}

}  // namespace fluxion::kernel
