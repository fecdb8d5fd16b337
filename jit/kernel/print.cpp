// The text form of a schedule: one line per kernel with the graph ops it contains, e.g.
//   kernel 0 loop f32[128,784] parallel: mul reduce_sum -> %3 %5
#include <sstream>

#include "jit/kernel/kernel_ir.h"

namespace fluxion::kernel {

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
    const Kernel& k = s.kernels[st.index];
    out << pad << "kernel " << st.index << (k.kind == KernelKind::MatMul ? " matmul " : " loop ") << shape_str(k.space)
        << (k.parallel ? " parallel" : "") << ":";
    for (size_t n : k.nodes) out << " " << ir::op_name(r.nodes[n].op);
    if (!k.recomputed.empty()) {
      out << " (recomputes";
      for (size_t n : k.recomputed) out << " " << ir::op_name(r.nodes[n].op);
      out << ")";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace fluxion::kernel
