// The text form of a schedule: one line per kernel with the graph ops it contains, e.g.
//   kernel 0 loop f32[128,784] parallel: mul reduce_sum -> %3 %5
#include <sstream>

#include "jit/kernel/kernel_ir.h"

namespace fluxion::kernel {

std::string kernel_line(const ir::Region& r, const Kernel& k, size_t index) {
  std::ostringstream out;
  const char* kind = k.kind == KernelKind::MatMul ? " matmul " : k.kind == KernelKind::StraightLine ? " straight " : " loop ";
  out << "kernel " << index << kind << shape_str(k.space)
      << (k.parallel ? " parallel" : "") << ":";
  for (size_t n : k.nodes) out << " " << ir::op_name(r.nodes[n].op);
  if (!k.recomputed.empty()) {
    out << " (recomputes";
    for (size_t n : k.recomputed) out << " " << ir::op_name(r.nodes[n].op);
    out << ")";
  }
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

}  // namespace fluxion::kernel
