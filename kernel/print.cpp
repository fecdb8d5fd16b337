// The text form of a schedule: one line per kernel with the graph ops it contains, e.g.
//   kernel 0 loop[flat] [128,784] parallel: mul reduce_sum
#include <sstream>

#include "kernel/cost.h"
#include "kernel/kernel_ir.h"

namespace fluxion::kernel {

std::string kernel_line(const ir::Region& r, const Kernel& k, size_t index) {
  std::ostringstream out;
  const char* kind = k.kind == KernelKind::MatMul         ? "matmul"
                     : k.kind == KernelKind::StraightLine ? "straight"
                     : k.kind == KernelKind::Scatter      ? "scatter"
                                                          : "loop";
  out << "kernel " << index << " " << kind;
  if (k.plan.strategy != Strategy::Unplanned) out << "[" << strategy_name(k.plan.strategy) << "]";
  out << " " << shape_str(k.space) << (k.parallel ? " parallel" : "") << (k.beside_previous ? " beside" : "");
  if (k.split_chunks > 1) {
    out << " split " << k.split_chunks;
    if (k.split_over == SplitOver::Columns) out << " columns";
    if (k.split_over == SplitOver::Images) out << " images";
    if (k.split_over == SplitOver::Depth) out << " depth";
  }
  out << ":";
  for (size_t n : k.nodes) out << " " << ir::op_name(r.nodes[n].op);
  if (!k.recomputed.empty()) {
    out << " (recomputes";
    for (size_t n : k.recomputed) out << " " << ir::op_name(r.nodes[n].op);
    out << ")";
  }
  if (std::string details = plan_details(k.plan); !details.empty()) out << " | " << details;
  return out.str();
}

std::string kernel_containing(const ir::Region& r, const RegionSchedule& s, const std::vector<size_t>& path) {
  if (path.empty()) return "";
  size_t node = path[0];
  if (path.size() >= 3) {
    auto it = s.nested.find(node);
    size_t region = path[1];
    if (it == s.nested.end() || region >= it->second.size() || region >= r.nodes[node].regions.size()) return "";
    std::string inner = kernel_containing(r.nodes[node].regions[region], it->second[region],
                                          std::vector<size_t>(path.begin() + 2, path.end()));
    if (inner.empty()) return "";
    auto names = ir::region_names(r.nodes[node].op);
    return inner + " (in the " + names[region] + " of " + ir::op_name(r.nodes[node].op) + ")";
  }
  for (size_t k = 0; k < s.kernels.size(); ++k)
    for (size_t n : s.kernels[k].nodes)
      if (n == node) return kernel_line(r, s.kernels[k], k);
  return "";
}

std::string print(const ir::Region& r, const RegionSchedule& s, int indent) {
  std::ostringstream out;
  std::string pad(static_cast<size_t>(indent), ' ');
  for (const Step& st : s.steps) {
    if (st.kind == Step::Kind::Wait) {
      out << pad << "wait for " << ir::op_name(r.nodes[st.index].op) << "\n";
      continue;
    }
    if (st.kind == Step::Kind::Control &&
        (ir::is_collective(r.nodes[st.index].op) || ir::is_effect(r.nodes[st.index].op))) {
      out << pad << ir::op_name(r.nodes[st.index].op) << " on the host\n";
      continue;
    }
    if (st.kind == Step::Kind::Control) {
      const ir::Node& n = r.nodes[st.index];
      out << pad << ir::op_name(n.op) << " {\n";
      const auto& subs = s.nested.at(st.index);
      auto names = ir::region_names(n.op);
      for (size_t i = 0; i < subs.size(); ++i) {
        out << pad << "  " << names[i] << ":\n" << print(n.regions[i], subs[i], indent + 4);
      }
      out << pad << "}\n";
      continue;
    }
    out << pad << kernel_line(r, s.kernels[st.index], st.index) << "\n";
  }
  return out.str();
}

namespace {

// Calls visit(where, region, schedule, kernel, index) for every kernel in running order.
template <class Schedule, class Visit>
void walk_kernels(const ir::Region& r, Schedule& s, const std::string& where, const Visit& visit) {
  for (const Step& st : s.steps) {
    if (st.kind == Step::Kind::Kernel) {
      visit(where, r, s, s.kernels[st.index], st.index);
      continue;
    }
    const ir::Node& n = r.nodes[st.index];
    if (st.kind == Step::Kind::Wait || ir::is_collective(n.op) || ir::is_effect(n.op)) continue;
    auto names = ir::region_names(n.op);
    auto& subs = s.nested.at(st.index);
    for (size_t i = 0; i < subs.size(); ++i) {
      walk_kernels(n.regions[i], subs[i],
                   where + ir::op_name(n.op) + "@" + std::to_string(st.index) + "." + names[i] + ": ", visit);
    }
  }
}

}  // namespace

std::vector<std::string> kernel_lines(const ir::Region& r, const RegionSchedule& s) {
  std::vector<std::string> out;
  walk_kernels(r, s, "",
               [&](const std::string& where, const ir::Region& region, const RegionSchedule&, const Kernel& k,
                   size_t index) { out.push_back(where + kernel_line(region, k, index)); });
  return out;
}

std::vector<KernelCost> kernel_costs(const ir::Region& r, const RegionSchedule& s) {
  std::vector<KernelCost> out;
  walk_kernels(r, s, "",
               [&](const std::string&, const ir::Region& region, const RegionSchedule& schedule, const Kernel& k,
                   size_t) { out.push_back(kernel_cost(region, schedule, k)); });
  return out;
}

void for_each_kernel(const ir::Region& r, RegionSchedule& s,
                     const std::function<void(const ir::Region&, const RegionSchedule&, Kernel&)>& visit) {
  walk_kernels(r, s, "",
               [&](const std::string&, const ir::Region& region, const RegionSchedule& schedule, Kernel& k, size_t) {
                 visit(region, schedule, k);
               });
}

}  // namespace fluxion::kernel
