#include <unordered_map>
#include <vector>

#include "jit/passes/passes.h"

namespace fluxion::passes {
namespace {

bool same_regions(const std::vector<ir::Region>& a, const std::vector<ir::Region>& b) {
  if (a.size() != b.size()) return false;
  // Regions are compared by their canonical text, the IR's definition of structural equality.
  for (size_t i = 0; i < a.size(); ++i) {
    if (ir::print(ir::Program{"r", a[i]}) != ir::print(ir::Program{"r", b[i]})) return false;
  }
  return true;
}

bool same_node(const ir::Region& r, const ir::Node& a, const ir::Node& b) {
  if (a.op != b.op || a.operands != b.operands || a.results.size() != b.results.size() || !(a.attrs == b.attrs)) {
    return false;
  }
  for (size_t i = 0; i < a.results.size(); ++i) {
    if (r.type(a.results[i]) != r.type(b.results[i])) return false;
  }
  return same_regions(a.regions, b.regions);
}

size_t quick_key(const ir::Node& n) {
  size_t h = static_cast<size_t>(n.op);
  for (ir::ValueId v : n.operands) h = h * 1000003u + static_cast<size_t>(v);
  return h;
}

}  // namespace

bool eliminate_common_subexpressions(ir::Region& r) {
  bool changed = false;
  std::vector<ir::ValueId> replace(r.types.size());
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<ir::ValueId>(v);
  std::unordered_map<size_t, std::vector<size_t>> seen;  // quick key -> indices of kept nodes
  std::vector<ir::Node> kept;
  for (ir::Node& n : r.nodes) {
    for (ir::ValueId& v : n.operands) v = replace[static_cast<size_t>(v)];
    for (ir::Region& inner : n.regions) changed = eliminate_common_subexpressions(inner) || changed;
    std::vector<size_t>& bucket = seen[quick_key(n)];
    const ir::Node* twin = nullptr;
    for (size_t k : bucket) {
      if (same_node(r, kept[k], n)) twin = &kept[k];
    }
    if (twin) {
      for (size_t i = 0; i < n.results.size(); ++i) replace[static_cast<size_t>(n.results[i])] = twin->results[i];
      changed = true;
      continue;
    }
    bucket.push_back(kept.size());
    kept.push_back(std::move(n));
  }
  r.nodes = std::move(kept);
  for (ir::ValueId& v : r.results) v = replace[static_cast<size_t>(v)];
  return changed;
}

}  // namespace fluxion::passes
