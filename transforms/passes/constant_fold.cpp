// Constant folding: a node whose operands are all constants is computed once, now, by the
// reference interpreter (so folding agrees with every backend by construction), and replaced by
// a constant. Results over kMaxFoldedElements elements stay as they are: a large constant costs
// program size and memory, while the op that makes it is cheap to run.
#include <bit>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "eval/interpreter.h"
#include "transforms/passes/passes.h"

namespace fluxion::passes {
namespace {

// A constant's data: one value when every element is the same (a splat), else all of them.
// Equal means equal bits: 0 and -0 are different elements.
std::vector<double> compact(std::vector<double> v) {
  for (double x : v) {
    if (std::bit_cast<uint64_t>(x) != std::bit_cast<uint64_t>(v[0])) return v;
  }
  v.resize(1);
  return v;
}

// Worth folding: not a region op (its body may be large, and loops stay loops), not a
// collective (its value depends on the other ranks, met at run time), not an op
// without operands (constant itself, and iota, which is as cheap to generate as to load), one
// result of 1 to kMaxFoldedElements elements (an empty result has nothing to compute).
bool foldable_shape(const ir::Region& r, const ir::Node& n) {
  if (n.operands.empty() || ir::has_regions(n.op) || ir::is_collective(n.op) || n.results.size() != 1) return false;
  int64_t size = r.type(n.results[0]).numel();
  return size > 0 && size <= kMaxFoldedElements;
}

}  // namespace

bool fold_constants(ir::Region& r) {
  bool changed = false;
  std::unordered_map<ir::ValueId, Array> values;  // the value of every constant seen so far
  for (ir::Node& n : r.nodes) {
    for (ir::Region& inner : n.regions) changed = fold_constants(inner) || changed;
    if (n.op == ir::Op::Constant) {
      // Only small constants are materialised: a large splat stays a splat, and folding never
      // allocates more than kMaxFoldedElements per value.
      if (r.type(n.results[0]).numel() <= kMaxFoldedElements) {
        values[n.results[0]] = eval::evaluate(n, {}, {r.type(n.results[0])})[0];
      }
      continue;
    }
    if (!foldable_shape(r, n)) continue;
    std::vector<Array> operands;
    for (ir::ValueId v : n.operands) {
      auto it = values.find(v);
      if (it == values.end()) break;
      operands.push_back(it->second);
    }
    if (operands.size() != n.operands.size()) continue;
    Array value = eval::evaluate(n, operands, {r.type(n.results[0])})[0];
    // The node becomes the constant in place, so its result id and source location stay.
    n.op = ir::Op::Constant;
    n.operands.clear();
    n.attrs = ir::Attrs{};
    n.attrs.data = compact(value.to_doubles());
    values[n.results[0]] = std::move(value);
    changed = true;
  }
  return changed;
}

}  // namespace fluxion::passes
