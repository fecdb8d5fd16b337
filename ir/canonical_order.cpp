// The canonical order of a region's nodes (ir.h, docs/ir.md): an order that depends only on the
// dataflow graph, not on the order in which independent nodes were traced, so that the
// structural hash, the compile cache and the printed text of the pipeline's programs do not
// depend on it either.
//
// The order is the post-order of a depth-first walk from the region's results (the first,
// then the others from the last), each node's dependencies visited before it: first, for an ordered node (a collective,
// an effect, or a region op holding one), the ordered node before it in the stored order (every
// rank must meet the collectives in the same order, and effects happen in program order, so
// their relative order is part of the program);
// then the producers of its operands, left to right. Nodes no result depends on (dead code,
// before DCE) come after, walked from the last ordered node, then from each node nothing uses,
// in the order of a key hashing its whole upstream graph (op, attributes, result types, the
// canonical text of its regions, the keys of its operands).
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace fluxion::ir {
namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

uint64_t mix(uint64_t h, const std::string& s) {
  uint64_t f = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) f = (f ^ c) * 1099511628211ull;
  return mix(mix(h, s.size()), f);
}

bool is_ordered(const Node& n) {
  if (is_collective(n.op) || has_effects(n)) return true;
  for (const Region& inner : n.regions) {
    if (has_collectives(inner)) return true;
  }
  return false;
}

class Order {
 public:
  explicit Order(const Region& r) : r_(r), producer_(r.types.size(), kNone), chain_(r.nodes.size(), kNone) {
    const size_t n = r.nodes.size();
    for (size_t i = 0; i < n; ++i) {
      for (ValueId v : r.nodes[i].results) {
        if (defined(v)) producer_[static_cast<size_t>(v)] = i;
      }
    }
    size_t previous = kNone;
    for (size_t i = 0; i < n; ++i) {
      if (!is_ordered(r.nodes[i])) continue;
      chain_[i] = previous;
      previous = i;
    }
    last_ordered_ = previous;
  }

  std::vector<size_t> compute() {
    const size_t n = r_.nodes.size();
    state_.assign(n, 0);
    order_.reserve(n);
    // The first result, then the others from the last: a gradient program returns its value,
    // then the gradients in parameter order, and from the last parameter each gradient's walk
    // follows the backward pass, so that each is computed as soon as its adjoint is (as reverse
    // mode traced it), rather than every adjoint staying live until its gradient's turn.
    const size_t results = r_.results.size();
    if (results > 0) walk(producer(r_.results[0]));
    for (size_t k = results; k-- > 1;) walk(producer(r_.results[k]));
    walk(last_ordered_);
    if (order_.size() < n) dead_roots();
    for (size_t i = 0; i < n; ++i) {  // only a cycle (broken IR) is left: stored order
      if (state_[i] == 0) order_.push_back(i);
    }
    return std::move(order_);
  }

 private:
  bool defined(ValueId v) const { return v >= 0 && static_cast<size_t>(v) < producer_.size(); }
  size_t producer(ValueId v) const { return defined(v) ? producer_[static_cast<size_t>(v)] : kNone; }

  // The k-th dependency of node i (kNone for a parameter or an undefined value); k runs to
  // 1 + the number of operands.
  size_t dependency(size_t i, size_t k) const {
    if (k == 0) return chain_[i];
    return producer(r_.nodes[i].operands[k - 1]);
  }
  size_t dependencies(size_t i) const { return 1 + r_.nodes[i].operands.size(); }

  // Iterative post-order walk (programs can be long chains).
  void walk(size_t root) {
    if (root == kNone || state_[root] != 0) return;
    std::vector<std::pair<size_t, size_t>> stack{{root, 0}};
    state_[root] = 1;
    while (!stack.empty()) {
      auto& [i, k] = stack.back();
      if (k < dependencies(i)) {
        size_t d = dependency(i, k++);
        if (d != kNone && state_[d] == 0) {
          state_[d] = 1;
          stack.push_back({d, 0});
        }
        continue;
      }
      state_[i] = 2;
      order_.push_back(i);
      stack.pop_back();
    }
  }

  // Walks from the nodes that nothing uses and no result reaches, in the order of their keys.
  void dead_roots() {
    const size_t n = r_.nodes.size();
    std::vector<bool> used(n, false);
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < dependencies(i); ++k) {
        if (size_t d = dependency(i, k); d != kNone) used[d] = true;
      }
    }
    std::vector<size_t> roots;
    for (size_t i = 0; i < n; ++i) {
      if (state_[i] == 0 && !used[i]) roots.push_back(i);
    }
    if (roots.size() > 1) {
      std::vector<uint64_t> key = keys();
      // Equal keys keep node order (roots are in increasing index); std::sort, as stable_sort's
      // temporary buffer is deprecated in the libstdc++ that clang builds the fuzz targets with.
      std::sort(roots.begin(), roots.end(),
                [&](size_t a, size_t b) { return key[a] != key[b] ? key[a] < key[b] : a < b; });
    }
    for (size_t root : roots) walk(root);
  }

  // A key of every node that depends on its upstream graph only. Computed in stored order,
  // which is a topological order of valid IR; a dependency stored later (broken IR) counts
  // as unknown.
  std::vector<uint64_t> keys() const {
    const size_t n = r_.nodes.size();
    std::vector<uint64_t> key(n, 0);
    std::vector<uint64_t> param(r_.types.size(), 0);
    for (size_t i = 0; i < r_.params.size(); ++i) {
      if (defined(r_.params[i])) param[static_cast<size_t>(r_.params[i])] = mix(0x70, i);
    }
    for (size_t i = 0; i < n; ++i) {
      const Node& node = r_.nodes[i];
      uint64_t h = mix(0x6e, std::string(op_name(node.op)));
      h = mix(h, print_attrs(node.attrs));
      for (ValueId v : node.results) h = mix(h, defined(v) ? r_.type(v).str() : std::string("?"));
      for (const Region& inner : node.regions) h = mix(h, print_canonical(inner));
      h = mix(h, chain_[i] != kNone && chain_[i] < i ? key[chain_[i]] : 0);
      for (ValueId v : node.operands) {
        size_t p = producer(v);
        if (p != kNone && p < i) {
          const std::vector<ValueId>& results = r_.nodes[p].results;
          size_t at = static_cast<size_t>(std::find(results.begin(), results.end(), v) - results.begin());
          h = mix(mix(h, key[p]), at);
        } else {
          h = mix(h, defined(v) && p == kNone ? param[static_cast<size_t>(v)] : 0x3f);
        }
      }
      key[i] = h;
    }
    return key;
  }

  const Region& r_;
  std::vector<size_t> producer_;  // by value id: the defining node, kNone for a parameter
  std::vector<size_t> chain_;     // by node: the ordered node before an ordered node
  size_t last_ordered_ = kNone;
  std::vector<uint8_t> state_;  // 0: not reached, 1: being walked, 2: placed
  std::vector<size_t> order_;
};

}  // namespace

std::vector<size_t> canonical_order(const Region& r) { return Order(r).compute(); }

bool canonicalize_order(Region& r) {
  bool changed = false;
  for (Node& n : r.nodes) {
    for (Region& inner : n.regions) changed = canonicalize_order(inner) || changed;
  }
  std::vector<size_t> order = canonical_order(r);
  bool moved = false;
  for (size_t i = 0; i < order.size(); ++i) moved = moved || order[i] != i;
  if (!moved) return changed;
  std::vector<Node> nodes;
  nodes.reserve(r.nodes.size());
  for (size_t i : order) nodes.push_back(std::move(r.nodes[i]));
  r.nodes = std::move(nodes);
  return true;
}

bool canonicalize_order(Program& p) { return canonicalize_order(p.body); }

}  // namespace fluxion::ir
