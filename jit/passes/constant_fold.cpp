#include <unordered_map>
#include <vector>

#include "backends/interp/interpreter.h"
#include "jit/passes/passes.h"

namespace fluxion::passes {
namespace {

// A constant's data: one value when every element is equal (a splat), else all of them.
std::vector<double> compact(std::vector<double> v) {
  for (double x : v) {
    if (x != v[0]) return v;
  }
  if (v.size() > 1) v.erase(v.begin() + 1, v.end());
  return v;
}

}  // namespace

bool fold_constants(ir::Region& r) {
  bool changed = false;
  std::unordered_map<ir::ValueId, const ir::Node*> constants;  // value -> the constant defining it
  for (ir::Node& n : r.nodes) {
    for (ir::Region& inner : n.regions) changed = fold_constants(inner) || changed;
    bool foldable = !n.operands.empty() && !ir::has_regions(n.op) && n.results.size() == 1 &&
                    r.type(n.results[0]).numel() <= kMaxFoldedElements && r.type(n.results[0]).numel() > 0;
    std::vector<Array> operands;
    for (size_t i = 0; foldable && i < n.operands.size(); ++i) {
      auto it = constants.find(n.operands[i]);
      foldable = it != constants.end();
      if (foldable) operands.push_back(interp::evaluate(*it->second, {}, {r.type(n.operands[i])})[0]);
    }
    if (foldable) {
      std::vector<double> data = interp::evaluate(n, operands, {r.type(n.results[0])})[0].to_doubles();
      n.op = ir::Op::Constant;
      n.operands.clear();
      n.attrs = ir::Attrs{};
      n.attrs.data = compact(std::move(data));
      changed = true;
    }
    if (n.op == ir::Op::Constant) constants[n.results[0]] = &n;
  }
  return changed;
}

}  // namespace fluxion::passes
