// Reductions split across workgroups (plan.h, split_reductions). A reduction kernel gives each
// kept index one row of at most a workgroup of lanes, so a whole-array sum runs in a single
// workgroup: on a GPU with over a hundred multiprocessors, one of them. Cutting a reduced axis
// that divides well into `parts` (the outermost that gives nearly the most) turns it into a
// reduction of rows x parts rows, which fills the device, followed by a reduction of the parts,
// as small as the result. Both are ordinary reductions: the fuser still computes the operand
// inside the first one.
//
// A product's sum over k is split the same way (split-K): a product of few output tiles and a
// long k, [m, k] x [k, n], becomes a batched product over parts of k, [parts, m, k / parts] x
// [parts, k / parts, n], whose parts a reduction then sums, in a fixed order.
#include <algorithm>

#include "backends/vulkan/plan.h"
#include "support/round_up.h"

namespace fluxion::vulkan {
namespace {

bool splittable(ir::Op op) { return op == ir::Op::ReduceSum || op == ir::Op::ReduceMax || op == ir::Op::ReduceMin; }

// The largest divisor of n that is at most cap (1 when none is above 1).
int64_t divisor_within(int64_t n, int64_t cap) {
  for (int64_t d = std::min(n, cap); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

struct Split {
  size_t axis = 0;
  int64_t parts = 1;
};

// How reduction `n` of r is cut, parts == 1 when it fills the device as it is.
Split split_of(const ir::Region& r, const ir::Node& n, const DeviceTuning& tuning) {
  const Shape& shape = r.type(n.operands[0]).shape;
  const std::vector<int64_t>& axes = n.attrs.axes;
  if (axes.empty()) return {};
  int64_t cols = 1;
  for (int64_t a : axes) cols *= shape[static_cast<size_t>(a)];
  if (cols < 2 || numel(shape) == 0) return {};
  int64_t rows = numel(shape) / cols;
  bool rows_inner = axes.back() != static_cast<int64_t>(shape.size()) - 1;
  ReductionLanes lanes = reduction_lanes(rows, cols, rows_inner, tuning);
  int64_t invocations = rows * lanes.row_lanes;
  if (invocations >= tuning.fill_invocations) return {};
  int64_t wanted = std::min(support::ceil_div(tuning.fill_invocations, invocations), cols / tuning.min_part_elements);
  // The outermost axis that gives at least half the most parts any axis gives: each part is
  // then one contiguous stretch of memory, or a few.
  int64_t most = 1;
  for (int64_t a : axes) most = std::max(most, divisor_within(shape[static_cast<size_t>(a)], wanted));
  for (int64_t a : axes) {
    int64_t parts = divisor_within(shape[static_cast<size_t>(a)], wanted);
    if (parts > 1 && 2 * parts >= most) return {static_cast<size_t>(a), parts};
  }
  return {};
}

// The parts of product n's k, 1 when its output tiles fill the device as they are.
int64_t product_parts(const ir::Region& r, const ir::Node& n, const DeviceTuning& tuning) {
  const Shape& a = r.type(n.operands[0]).shape;
  const Shape& c = r.type(n.results[0]).shape;
  if (numel(c) == 0 || tuning.min_part_depth <= 0) return 1;
  int64_t m = c[c.size() - 2], cols = c.back(), k = a.back();
  const kernel::Tile& t = tuning.product;
  int64_t tiles = numel(c) / (m * cols) * support::ceil_div(m, t.m) * support::ceil_div(cols, t.n);
  int64_t enough = support::ceil_div(tuning.fill_invocations, tile_invocations(t));
  if (tiles >= enough) return 1;
  return divisor_within(k, std::min(support::ceil_div(enough, tiles), k / tuning.min_part_depth));
}

// Rewrites one region: each split reduction's operand is recomputed at the cut shape where its
// elementwise producers have no other reader, so that the fuser still computes it inside the
// partial reduction (a reshape of a computed value would be stored first: a whole extra pass).
class Splitter {
 public:
  Splitter(ir::Region& r, const DeviceTuning& tuning) : r_(r), tuning_(tuning), uses_(r.types.size(), 0) {
    for (const ir::Node& n : r.nodes) {
      for (ir::ValueId o : n.operands) ++uses_[static_cast<size_t>(o)];
    }
    for (ir::ValueId v : r.results) ++uses_[static_cast<size_t>(v)];
  }

  bool run() {
    bool changed = false;
    producer_.assign(r_.types.size(), -1);
    std::vector<ir::Node> nodes = std::move(r_.nodes);
    r_.nodes.clear();
    for (ir::Node& n : nodes) {
      for (ir::Region& inner : n.regions) changed = split_reductions(inner, tuning_) || changed;
      if (n.op == ir::Op::MatMul) {
        int64_t parts = product_parts(r_, n, tuning_);
        if (parts > 1) {
          changed = true;
          split_product(std::move(n), parts);
          continue;
        }
      }
      Split s = splittable(n.op) ? split_of(r_, n, tuning_) : Split{};
      if (s.parts < 2) {
        push(std::move(n));
        continue;
      }
      changed = true;
      split(std::move(n), s);
    }
    std::vector<ir::Node> kept;
    for (size_t i = 0; i < out_.size(); ++i) {
      if (!orphaned_[i]) kept.push_back(std::move(out_[i]));
    }
    r_.nodes = std::move(kept);
    return changed;
  }

 private:
  void push(ir::Node n) {
    for (ir::ValueId v : n.results) producer_[static_cast<size_t>(v)] = static_cast<int64_t>(out_.size());
    out_.push_back(std::move(n));
    orphaned_.push_back(false);
  }

  ir::ValueId emit(ir::Op op, std::vector<ir::ValueId> operands, ir::Attrs attrs, TensorType type, const ir::Node& at) {
    ir::Node n;
    n.op = op;
    n.operands = std::move(operands);
    n.attrs = std::move(attrs);
    ir::ValueId v = r_.new_value(std::move(type));
    producer_.push_back(-1);
    uses_.push_back(0);
    n.results = {v};
    n.file = at.file;
    n.line = at.line;
    for (ir::ValueId o : n.operands) ++uses_[static_cast<size_t>(o)];
    push(std::move(n));
    return v;
  }

  ir::ValueId reshape(ir::ValueId v, Shape to, const ir::Node& at) {
    if (r_.type(v).shape == to) return v;
    return emit(ir::Op::Reshape, {v}, {}, {r_.type(v).dtype, std::move(to)}, at);
  }

  // v (of the reduction operand's shape) at the cut shape, axis `axis` cut into [parts, rest].
  ir::ValueId cut(ir::ValueId v, size_t axis, int64_t parts, const ir::Node& at) {
    const TensorType t = r_.type(v);
    Shape to = t.shape;
    to[axis] /= parts;
    to.insert(to.begin() + static_cast<long>(axis), parts);
    int64_t p = producer_[static_cast<size_t>(v)];
    if (p < 0 || uses_[static_cast<size_t>(v)] != 1 || out_[static_cast<size_t>(p)].results.size() != 1)
      return reshape(v, to, at);
    const ir::Node& n = out_[static_cast<size_t>(p)];
    if (ir::is_elementwise(n.op)) {
      ir::Node copy = n;
      for (ir::ValueId& o : copy.operands) o = cut(o, axis, parts, at);
      orphaned_[static_cast<size_t>(p)] = true;
      return emit(copy.op, copy.operands, copy.attrs, {t.dtype, to}, copy);
    }
    if (n.op == ir::Op::Broadcast) {
      // The source is right-aligned to the operand's shape: its dimension under the cut axis,
      // if any, is cut alike (or split into two units when it is broadcast).
      ir::ValueId source = n.operands[0];
      Shape from = r_.type(source).shape;
      int64_t under = static_cast<int64_t>(axis) - static_cast<int64_t>(t.shape.size() - from.size());
      if (under >= 0) {
        size_t u = static_cast<size_t>(under);
        int64_t outer = from[u] == 1 ? 1 : parts;
        from[u] /= outer;
        from.insert(from.begin() + under, outer);
      }
      ir::Node at_broadcast = n;
      orphaned_[static_cast<size_t>(p)] = true;
      return emit(ir::Op::Broadcast, {reshape(source, from, at_broadcast)}, {}, {t.dtype, to}, at_broadcast);
    }
    if (n.op == ir::Op::Constant && n.attrs.data.size() == 1) {
      orphaned_[static_cast<size_t>(p)] = true;
      return emit(ir::Op::Constant, {}, n.attrs, {t.dtype, to}, n);
    }
    return reshape(v, to, at);
  }

  void split(ir::Node n, const Split& s) {
    ir::ValueId operand = cut(n.operands[0], s.axis, s.parts, n);
    const Shape cut_shape = r_.type(operand).shape;
    // The partial reduction keeps the parts axis where the split axis was among the kept ones.
    ir::Attrs partial_attrs;
    Shape partial_shape;
    int64_t parts_position = 0;
    for (size_t d = 0; d < cut_shape.size(); ++d) {
      size_t original = d <= s.axis ? d : d - 1;
      bool folded = d != s.axis && std::find(n.attrs.axes.begin(), n.attrs.axes.end(),
                                             static_cast<int64_t>(original)) != n.attrs.axes.end();
      if (folded) {
        partial_attrs.axes.push_back(static_cast<int64_t>(d));
      } else {
        if (d == s.axis) parts_position = static_cast<int64_t>(partial_shape.size());
        partial_shape.push_back(cut_shape[d]);
      }
    }
    ir::ValueId partial = emit(n.op, {operand}, partial_attrs, {r_.type(operand).dtype, partial_shape}, n);
    --uses_[static_cast<size_t>(n.operands[0])];
    n.operands = {partial};
    n.attrs.axes = {parts_position};
    ++uses_[static_cast<size_t>(partial)];
    push(std::move(n));
  }

  // [..., m, k] x [..., k, n] as [..., parts, m, k / parts] x [..., parts, k / parts, n], then
  // the sum over parts. The operands' reshapes and transpose are views the product reads
  // through its index math.
  void split_product(ir::Node n, int64_t parts) {
    const TensorType a = r_.type(n.operands[0]), b = r_.type(n.operands[1]), c = r_.type(n.results[0]);
    size_t batch = a.shape.size() - 2;
    int64_t m = a.shape[batch], k = a.shape[batch + 1], cols = b.shape.back();
    Shape batch_shape(a.shape.begin(), a.shape.begin() + static_cast<long>(batch));
    auto with = [&](std::initializer_list<int64_t> tail) {
      Shape s = batch_shape;
      s.insert(s.end(), tail);
      return s;
    };
    ir::ValueId a_cut = reshape(n.operands[0], with({m, parts, k / parts}), n);
    ir::Attrs perm;
    for (size_t d = 0; d < batch; ++d) perm.perm.push_back(static_cast<int64_t>(d));
    for (int64_t d : {1, 0, 2}) perm.perm.push_back(static_cast<int64_t>(batch) + d);
    ir::ValueId a_parts = emit(ir::Op::Transpose, {a_cut}, perm, {a.dtype, with({parts, m, k / parts})}, n);
    ir::ValueId b_parts = reshape(n.operands[1], with({parts, k / parts, cols}), n);
    // The parts keep the product's attributes (a permission to sum in f16).
    ir::ValueId partial = emit(ir::Op::MatMul, {a_parts, b_parts}, n.attrs, {c.dtype, with({parts, m, cols})}, n);
    ir::Node combine = std::move(n);
    combine.op = ir::Op::ReduceSum;
    combine.operands = {partial};
    combine.attrs = {};
    combine.attrs.axes = {static_cast<int64_t>(batch)};
    ++uses_[static_cast<size_t>(partial)];
    push(std::move(combine));
  }

  ir::Region& r_;
  const DeviceTuning& tuning_;
  std::vector<int64_t> uses_;
  std::vector<int64_t> producer_;  // index in out_ of each value's node, -1 for none
  std::vector<ir::Node> out_;
  std::vector<bool> orphaned_;  // out_ nodes whose only reader was recomputed at the cut shape
};

}  // namespace

bool split_reductions(ir::Region& r, const DeviceTuning& tuning) { return Splitter(r, tuning).run(); }

}  // namespace fluxion::vulkan
