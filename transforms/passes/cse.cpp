// Common-subexpression elimination: of two nodes that compute the same thing, the later is
// dropped and its uses read the earlier. Every op is pure (random ops are functions of their
// key), so equal op, operands, attributes, result types and regions mean equal values.
#include <bit>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "transforms/passes/passes.h"

namespace fluxion::passes {
namespace {

// Constant data is compared by bit pattern, not by ==: 0 and -0 are == but different
// constants (1/x tells them apart), while a NaN is != itself but the same constant.
bool same_data(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint64_t>(a[i]) != std::bit_cast<uint64_t>(b[i])) return false;
  }
  return true;
}

bool same_attrs(const ir::Attrs& a, const ir::Attrs& b) {
  if (!same_data(a.data, b.data)) return false;
  // Every other field with Attrs' own ==, so a field added to Attrs is compared too.
  ir::Attrs x = a, y = b;
  x.data.clear();
  y.data.clear();
  return x == y;
}

bool same_node(const ir::Region& r, const ir::Node& a, const ir::Node& b) {
  if (a.op != b.op || a.operands != b.operands || a.results.size() != b.results.size() ||
      a.regions.size() != b.regions.size() || !same_attrs(a.attrs, b.attrs)) {
    return false;
  }
  for (size_t i = 0; i < a.results.size(); ++i) {
    if (r.type(a.results[i]) != r.type(b.results[i])) return false;
  }
  // Regions are compared by their canonical text, the IR's definition of structural equality.
  for (size_t i = 0; i < a.regions.size(); ++i) {
    if (ir::print(a.regions[i]) != ir::print(b.regions[i])) return false;
  }
  return true;
}

// A hash of the cheap parts of a node, so that only likely twins are compared in full. It
// includes the constant data and the first result's shape, since a traced program has many
// operand-less constants that differ only there.
size_t bucket_key(const ir::Region& r, const ir::Node& n) {
  uint64_t h = static_cast<uint64_t>(n.op);
  auto mix = [&h](uint64_t x) { h = (h ^ x) * 0x100000001b3ull; };
  for (ir::ValueId v : n.operands) mix(static_cast<uint64_t>(v));
  for (double d : n.attrs.data) mix(std::bit_cast<uint64_t>(d));
  if (!n.results.empty()) {
    const TensorType& t = r.type(n.results[0]);
    mix(static_cast<uint64_t>(t.dtype));
    for (int64_t d : t.shape) mix(static_cast<uint64_t>(d));
  }
  return static_cast<size_t>(h);
}

}  // namespace

bool eliminate_common_subexpressions(ir::Region& r) {
  bool changed = false;
  // replace[v]: the value that stands for v from now on (itself unless v's node was merged).
  std::vector<ir::ValueId> replace(r.types.size());
  for (size_t v = 0; v < replace.size(); ++v) replace[v] = static_cast<ir::ValueId>(v);
  std::unordered_map<size_t, std::vector<size_t>> buckets;  // bucket key -> indices into kept
  std::vector<ir::Node> kept;
  for (ir::Node& n : r.nodes) {
    for (ir::ValueId& v : n.operands) v = replace[static_cast<size_t>(v)];
    // Inner regions first, so that two loops whose bodies become equal are then merged.
    for (ir::Region& inner : n.regions) changed = eliminate_common_subexpressions(inner) || changed;
    std::vector<size_t>& bucket = buckets[bucket_key(r, n)];
    const ir::Node* twin = nullptr;
    // Two prints of one value print twice; a loop holding one is not merged with its twin.
    for (size_t k : ir::has_effects(n) ? std::vector<size_t>{} : bucket) {
      if (same_node(r, kept[k], n)) {
        twin = &kept[k];
        break;
      }
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
