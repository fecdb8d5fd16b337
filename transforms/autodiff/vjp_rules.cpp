// Dispatch of the reverse rules to their families.
#include "transforms/autodiff/vjp_rules.h"

namespace fluxion::autodiff {

using ir::Op;
using ir::ValueId;

std::vector<ValueId> vjp(Builder& b, const ir::Node& n, size_t index, const std::vector<ValueId>& adjoints,
                         const std::vector<bool>& want) {
  if (n.op == Op::Scan) return vjp_scan(b, n, index, adjoints, want);
  if (n.op == Op::Cond) return vjp_cond(b, n, adjoints, want);
  if (n.op == Op::While) return vjp_while(b, n, adjoints, want);
  if (n.op == Op::CustomVjp) return vjp_custom(b, n, adjoints, want);
  if (n.op == Op::CustomJvp) return vjp_custom_jvp(b, n, adjoints, want);
  if (ir::is_elementwise(n.op)) return vjp_elementwise(b, n, adjoints[0], want);
  return vjp_structural(b, n, adjoints[0], want);
}

}  // namespace fluxion::autodiff
