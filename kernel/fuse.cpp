// The fuser: cuts a graph-IR region into kernels (docs/kernels.md, "Fusion rules").
//
// Nodes are visited in program order. An elementwise node joins the kernel of the producers it
// consumes directly (same index space), merging their kernels when that creates no cycle; a
// reduction joins the kernel of its input; a matmul starts a MatMul kernel whose elementwise
// consumers become its epilogue. Views (transpose, broadcast, slice, reshape, pad, concat,
// gather, take) are folded into the index math of whoever reads them, so their operands are
// materialized. A scatter_add is a Scatter kernel of its own, reading stored operands. A value
// read across kernels is stored, unless it is a short chain of cheap elementwise ops, which the
// reader recomputes from the chain's inputs.
#include <algorithm>
#include <climits>
#include <functional>
#include <set>
#include <string>

#include "fluxion/error.h"
#include "kernel/kernel_ir.h"
#include "kernel/scatter_lowering.h"
#include "support/round_up.h"
#include "support/settings.h"

namespace fluxion::kernel {
namespace {

using ir::Op;
using ir::OpClass;
using ir::ValueId;

enum class Role : uint8_t { Inline, Global, View, Elementwise, Reduce, Gathering, MatMul, Scatter, Control };

// Largest k-block (elements) a convolution kernel packs per panel.
constexpr int64_t kMaxPackedBlock = 4096;

// Longest chain of cheap ops a reader recomputes instead of reading a stored value.
constexpr int kMaxRecomputedNodes = 6;

// How far ahead (steps) a kernel may be moved up to run side by side with the ones before it:
// far enough for a scan body's independent products, near enough that a value computed early
// does not hold its bytes for long.
constexpr size_t kSideBySideLookahead = 16;

Role role_of(const ir::Region& r, const ir::Node& n) {
  if (n.op == Op::Constant) return n.attrs.data.size() == 1 ? Role::Inline : Role::Global;
  if (ir::is_view(n.op)) return Role::View;
  // Collectives and effects run on the host between kernels, like a control-flow step without
  // regions.
  if (has_regions(n.op) || ir::is_collective(n.op) || ir::is_effect(n.op)) return Role::Control;
  bool is_float_result = is_float(r.type(n.results[0]).dtype);
  if (n.op == Op::MatMul) return is_float_result ? Role::MatMul : Role::Gathering;
  // Convolutions without groups run as the MatMul kernel, reading their input as im2col.
  if (ir::op_info(n.op).cls == OpClass::Conv || n.op == Op::Conv2dInputGrad || n.op == Op::Conv2dWeightGrad) {
    // (The weight gradient's k-blocks are whole output images, packed on the stack: keep them small.)
    bool small_blocks = n.op != Op::Conv2dWeightGrad ||
                        r.type(n.operands[1]).numel() /
                                std::max<int64_t>(1, r.type(n.operands[1]).shape[0] * r.type(n.operands[1]).shape[1]) <=
                            kMaxPackedBlock;
    return is_float_result && n.attrs.groups == 1 && small_blocks && !is_direct_conv(r, n) ? Role::MatMul
                                                                                           : Role::Gathering;
  }
  if (ir::is_gathering(n.op)) return Role::Gathering;
  if (ir::is_scatter(n.op)) return Role::Scatter;
  if (ir::op_role(n.op) == ir::OpRole::Reduce) return Role::Reduce;
  return Role::Elementwise;
}

struct Group {
  KernelKind kind = KernelKind::Loop;
  Shape space;
  std::vector<size_t> nodes, recomputed;
  std::set<int> preds;
  std::set<ValueId> leaves;                // stored values it reads
  int parent = -1;                         // union-find: merged into
  int control_node = -1;                   // a control-flow step, not a kernel
  int root = -1;                           // MatMul: the matmul node
  bool copy = false;                       // materializes a view or constant; takes no other nodes
  std::vector<StridedView> operand_views;  // MatMul over a matmul: Kernel::operand_views
};

class Fuser {
 public:
  Fuser(const ir::Region& r, bool top_level, const FusionOptions& options)
      : region_(r), top_level_(top_level), options_(options) {
    producer_ = producers(r);
    for (const ir::Node& n : r.nodes) roles_.push_back(role_of(r, n));
    must_.assign(r.types.size(), false);
    group_of_.assign(r.nodes.size(), -1);
    // Storage is not final while fusing: for strided views a value counts as a buffer unless
    // it is a view or a splat.
    probe_.storage.assign(r.types.size(), Storage::Slot);
    for (size_t i = 0; i < r.nodes.size(); ++i) {
      Storage s = roles_[i] == Role::View ? Storage::View : roles_[i] == Role::Inline ? Storage::Inline : Storage::Slot;
      for (ValueId res : r.nodes[i].results) probe_.storage[static_cast<size_t>(res)] = s;
    }
  }

  RegionSchedule run() {
    for (size_t i = 0; i < region_.nodes.size(); ++i) visit(i);
    for (ValueId v : region_.results) need_buffer(v);
    return finish();
  }

 private:
  int find(int g) {
    while (groups_[static_cast<size_t>(g)].parent >= 0) g = groups_[static_cast<size_t>(g)].parent;
    return g;
  }
  Group& G(int g) { return groups_[static_cast<size_t>(find(g))]; }
  Role role(ValueId v) const {
    int p = producer_[static_cast<size_t>(v)];
    return p < 0 ? Role::Global : roles_[static_cast<size_t>(p)];  // a parameter reads like a global
  }
  int group_of_value(ValueId v) {
    int p = producer_[static_cast<size_t>(v)];
    return p < 0 || group_of_[static_cast<size_t>(p)] < 0 ? -1 : find(group_of_[static_cast<size_t>(p)]);
  }

  // Whether group a depends, directly or not, on group b.
  bool depends(int a, int b) {
    a = find(a), b = find(b);
    std::vector<int> stack{a};
    std::set<int> seen{a};
    while (!stack.empty()) {
      int g = stack.back();
      stack.pop_back();
      for (int p : G(g).preds) {
        p = find(p);
        if (p == b) return true;
        if (seen.insert(p).second) stack.push_back(p);
      }
    }
    return false;
  }

  int new_group(KernelKind kind, Shape space) {
    Group g;
    g.kind = kind;
    g.space = std::move(space);
    groups_.push_back(std::move(g));
    return static_cast<int>(groups_.size() - 1);
  }

  // The value v must exist as a buffer for its reader. Views and splat constants get a copy
  // kernel; a reshape of a buffer aliases it. Returns the groups the reader then depends on.
  std::set<int> need_buffer(ValueId v) {
    int p = producer_[static_cast<size_t>(v)];
    if (p < 0) return {};
    size_t pn = static_cast<size_t>(p);
    Role ro = roles_[pn];
    if (ro == Role::Global) return {};
    if (ro == Role::View && region_.nodes[pn].op == Op::Reshape && role(region_.nodes[pn].operands[0]) != Role::View &&
        role(region_.nodes[pn].operands[0]) != Role::Inline) {
      return need_buffer(region_.nodes[pn].operands[0]);
    }
    if ((ro == Role::View || ro == Role::Inline) && group_of_[pn] < 0) {
      std::set<int> bases;
      for (ValueId o : region_.nodes[pn].operands) {
        auto b = view_base_groups(o);
        bases.insert(b.begin(), b.end());
      }
      int c = new_group(KernelKind::Loop, region_.type(v).shape);
      groups_[static_cast<size_t>(c)].copy = true;
      groups_[static_cast<size_t>(c)].nodes.push_back(pn);
      groups_[static_cast<size_t>(c)].preds = bases;
      group_of_[pn] = c;
      // Materialized now: later strided views of it read its buffer (a product reading the
      // transpose of a concatenation another product stored).
      for (ValueId res : region_.nodes[pn].results) probe_.storage[static_cast<size_t>(res)] = Storage::Slot;
    }
    must_[static_cast<size_t>(v)] = true;
    int g = group_of_value(v);
    if (g < 0) return {};
    return {g};
  }

  // Whether a reader of v through views goes on to v's operands: v is a view not stored, or
  // (`widening`) a conversion to f32 that the reader does as it loads.
  bool read_through(size_t pn, bool widening) const {
    return (roles_[pn] == Role::View && group_of_[pn] < 0) || (widening && is_widening(region_, region_.nodes[pn]));
  }

  // Groups whose stored values a view of v reads (marking those values stored); `widening` as in
  // strided_view.
  std::set<int> view_base_groups(ValueId v, bool widening = false) {
    int p = producer_[static_cast<size_t>(v)];
    if (p < 0) return {};
    size_t pn = static_cast<size_t>(p);
    if (read_through(pn, widening)) {
      std::set<int> out;
      for (ValueId o : region_.nodes[pn].operands) {
        auto s = view_base_groups(o, widening);
        out.insert(s.begin(), s.end());
      }
      return out;
    }
    if (roles_[pn] == Role::Inline || roles_[pn] == Role::Global) return {};
    must_[static_cast<size_t>(v)] = true;
    int g = group_of_value(v);
    return g < 0 ? std::set<int>{} : std::set<int>{g};
  }

  // Stored leaves of a view chain (for sibling matching).
  void view_leaves(ValueId v, std::set<ValueId>& out, bool widening = false) {
    int p = producer_[static_cast<size_t>(v)];
    if (p >= 0 && read_through(static_cast<size_t>(p), widening)) {
      for (ValueId o : region_.nodes[static_cast<size_t>(p)].operands) view_leaves(o, out, widening);
    } else if (p < 0 || roles_[static_cast<size_t>(p)] != Role::Inline) {
      out.insert(v);
    }
  }

  // The cheap elementwise chain computing v inside its kernel, down to stored values; empty
  // when v is too expensive to recompute.
  bool cheap_chain(ValueId v, int g, std::vector<size_t>& chain) {
    int p = producer_[static_cast<size_t>(v)];
    if (p < 0) return true;
    size_t pn = static_cast<size_t>(p);
    if (roles_[pn] != Role::Elementwise || group_of_[pn] < 0 || find(group_of_[pn]) != g) return true;
    if (!ir::is_cheap(region_.nodes[pn].op) || static_cast<int>(chain.size()) >= kMaxRecomputedNodes) return false;
    if (std::find(chain.begin(), chain.end(), pn) != chain.end()) return true;
    for (ValueId o : region_.nodes[pn].operands) {
      // A value stored anyway (tanh's h, read by the next layer's matmul) is read, not
      // recomputed: the chain stops there (1 - h * h from a stored h).
      if (must_[static_cast<size_t>(o)]) continue;
      if (!cheap_chain(o, g, chain)) return false;
    }
    chain.push_back(pn);
    return true;
  }

  // The axes the reductions of group g fold (all of them, when options_ forbid mixing), or
  // nullptr when it has none.
  const std::vector<int64_t>* reduced_axes(int g) {
    for (size_t i : G(g).nodes) {
      if (roles_[i] == Role::Reduce) return &region_.nodes[i].attrs.axes;
    }
    return nullptr;
  }

  // Whether groups a and b may share one kernel as far as their reductions go.
  bool reductions_fit(int a, int b) {
    if (options_.mixed_reductions) return true;
    const std::vector<int64_t>* ra = reduced_axes(a);
    const std::vector<int64_t>* rb = reduced_axes(b);
    if ((ra && G(b).kind == KernelKind::MatMul) || (rb && G(a).kind == KernelKind::MatMul)) return false;
    return !ra || !rb || *ra == *rb;
  }

  bool can_merge(int a, int b) {
    a = find(a), b = find(b);
    if (a == b) return true;
    const Group &ga = G(a), &gb = G(b);
    if (ga.copy || gb.copy || ga.control_node >= 0 || gb.control_node >= 0) return false;
    if (ga.kind == KernelKind::Scatter || gb.kind == KernelKind::Scatter) return false;
    if (ga.kind == KernelKind::MatMul && gb.kind == KernelKind::MatMul) return false;
    if (!reductions_fit(a, b)) return false;
    return !depends(a, b) && !depends(b, a);
  }

  int merge(int a, int b) {
    a = find(a), b = find(b);
    if (a == b) return a;
    if (G(b).kind == KernelKind::MatMul) std::swap(a, b);  // the MatMul group stays the root
    Group& ga = groups_[static_cast<size_t>(a)];
    Group& gb = groups_[static_cast<size_t>(b)];
    ga.nodes.insert(ga.nodes.end(), gb.nodes.begin(), gb.nodes.end());
    ga.recomputed.insert(ga.recomputed.end(), gb.recomputed.begin(), gb.recomputed.end());
    ga.preds.insert(gb.preds.begin(), gb.preds.end());
    ga.leaves.insert(gb.leaves.begin(), gb.leaves.end());
    gb.parent = a;
    return a;
  }

  void visit(size_t i) {
    switch (roles_[i]) {
      case Role::Inline:
      case Role::Global:
      case Role::View: return;  // folded into readers, or a copy made when one needs a buffer
      case Role::Control: return add_control_step(i);
      case Role::MatMul: return start_matmul(i);
      case Role::Scatter: return add_scatter(i);
      default: return fuse(i);
    }
  }

  // A control-flow node is a step of its own; its operands are stored. A step holding an effect
  // comes after the one before it, so that prints keep program order.
  void add_control_step(size_t i) {
    int g = new_group(KernelKind::Loop, {});
    groups_[static_cast<size_t>(g)].control_node = static_cast<int>(i);
    for (ValueId o : region_.nodes[i].operands) {
      for (int d : need_buffer(o)) groups_[static_cast<size_t>(g)].preds.insert(d);
    }
    if (ir::has_effects(region_.nodes[i])) {
      if (last_effect_ >= 0) groups_[static_cast<size_t>(g)].preds.insert(last_effect_);
      last_effect_ = g;
    }
    group_of_[i] = g;
  }

  // A scatter_add is a Scatter kernel alone: its operands and its result are stored, so nothing
  // fuses into it (a fused producer would be recomputed per index scanned) nor after it (its
  // elements are complete only when the kernel ends).
  void add_scatter(size_t i) {
    const ir::Node& n = region_.nodes[i];
    int g = new_group(KernelKind::Scatter, region_.type(n.results[0]).shape);
    groups_[static_cast<size_t>(g)].root = static_cast<int>(i);
    groups_[static_cast<size_t>(g)].nodes.push_back(i);
    for (ValueId o : n.operands) {
      for (int d : need_buffer(o)) groups_[static_cast<size_t>(g)].preds.insert(d);
    }
    group_of_[i] = g;
    must_[static_cast<size_t>(n.results[0])] = true;
  }

  // A matmul or convolution starts a MatMul kernel reading its operands through strided views
  // (a matmul), else from buffers. A widening conversion before it (the one sum_halves_in_f32
  // puts before a product of 16-bit values) is done as each element is loaded, so that no f32
  // copy of a 16-bit operand is stored and read back: a matmul's view goes through it, a
  // convolution recomputes it.
  void start_matmul(size_t i) {
    const ir::Node& n = region_.nodes[i];
    int g = new_group(KernelKind::MatMul, region_.type(n.results[0]).shape);
    // g's group is looked up by index each time: need_buffer may add groups.
    G(g).root = static_cast<int>(i);
    G(g).nodes.push_back(i);
    std::set<int> deps;
    std::vector<size_t> widenings;
    std::vector<StridedView> views;
    for (ValueId o : n.operands) {
      StridedView sv;
      std::set<int> d;
      bool widened = false;
      if (n.op == Op::MatMul) {
        // Through a widening conversion where the view goes on below it, else down to the
        // converted value (a reshape of a slice may have strides only above the conversion).
        widened = strided_operand(o, &sv, true);
        bool strided = widened || strided_operand(o, &sv, false);
        d = strided ? view_base_groups(o, widened) : need_buffer(o);
        // The view read is the one the dependencies were taken from, now: a copy of a view in
        // the chain made later (for a result, or another reader) is not ordered before this
        // kernel. (An operand that need_buffer stored, a splat among them, is read from its
        // buffer.)
        if (!strided && !strided_view(region_, probe_, producer_, o, &sv))
          detail::fail("fuse", "internal error: a stored matmul operand is not a strided view");
        views.push_back(sv);
      } else if (int p = producer_[static_cast<size_t>(o)];
                 p >= 0 && is_widening(region_, region_.nodes[static_cast<size_t>(p)])) {
        // A convolution reads its operands whole: the 16-bit one is stored.
        widened = true;
        d = need_buffer(region_.nodes[static_cast<size_t>(p)].operands[0]);
        widenings.push_back(static_cast<size_t>(p));
      } else {
        d = need_buffer(o);
      }
      deps.insert(d.begin(), d.end());
      view_leaves(o, G(g).leaves, widened);
    }
    G(g).preds = deps;
    G(g).recomputed = widenings;
    if (n.op == Op::MatMul) G(g).operand_views = std::move(views);
    group_of_[i] = g;
    must_[static_cast<size_t>(n.results[0])] = true;
  }

  // How a fusible node reads its operands.
  struct Reads {
    std::set<int> fused;                // kernels whose values it reads at its own index
    std::vector<ValueId> fused_values;  // those values
    std::set<int> stored;               // kernels whose stored values it reads
    std::set<ValueId> leaves;           // the stored values
  };

  Reads reads_of(size_t i, const Shape& space) {
    const ir::Node& n = region_.nodes[i];
    Reads out;
    for (ValueId o : n.operands) {
      int p = producer_[static_cast<size_t>(o)];
      Role pr = role(o);
      bool direct = roles_[i] != Role::Gathering && p >= 0 &&
                    (pr == Role::Elementwise || pr == Role::Gathering || pr == Role::MatMul) &&
                    group_of_[static_cast<size_t>(p)] >= 0 && G(group_of_[static_cast<size_t>(p)]).space == space &&
                    !G(group_of_[static_cast<size_t>(p)]).copy;
      if (direct) {
        out.fused.insert(find(group_of_[static_cast<size_t>(p)]));
        out.fused_values.push_back(o);
      } else {
        auto d = view_base_groups(o);
        out.stored.insert(d.begin(), d.end());
        view_leaves(o, out.leaves);
      }
    }
    return out;
  }

  // Whether node i may join kernel t when it also reads the stored values of kernels `reads`.
  bool may_join(int t, size_t i, const std::set<int>& reads) {
    if (t < 0) return false;
    const Group& gt = G(t);
    if (gt.copy || gt.control_node >= 0 || gt.kind == KernelKind::Scatter) return false;
    if (gt.kind == KernelKind::MatMul && roles_[i] == Role::Gathering) return false;
    if (roles_[i] == Role::Reduce && !options_.mixed_reductions) {
      if (gt.kind == KernelKind::MatMul) return false;
      const std::vector<int64_t>* axes = reduced_axes(t);
      if (axes && *axes != region_.nodes[i].attrs.axes) return false;
    }
    for (int s : reads) {
      if (find(s) == find(t) || depends(s, t)) return false;
    }
    return true;
  }

  // Which of the kernels whose values a node reads at its own index it joins: the most recent,
  // but between matrix products, which never merge, the one whose operands are ready last (its
  // newest predecessor is the newest), so that the other waits for nothing it does not need and
  // may run side by side with the kernels before (an LSTM's second layer: its input product
  // waits for the first layer's step, its recurrent product does not); where none is ready
  // later, the first, so that the layers of a stack, whose sums read their products in the same
  // order, get the same code.
  int join_target(const std::set<int>& fused) {
    if (!std::all_of(fused.begin(), fused.end(), [&](int g) { return G(g).kind == KernelKind::MatMul; }))
      return *fused.rbegin();
    int best = *fused.begin();
    auto newest_pred = [&](int g) {
      int newest = -1;
      for (int p : G(g).preds) newest = std::max(newest, find(p));
      return newest;
    };
    for (int g : fused) {
      if (newest_pred(g) > newest_pred(best)) best = g;
    }
    return best;
  }

  // Joins the producer kernel join_target picks for node i, merging the others into it where that
  // creates no cycle; a value of a kernel that cannot be joined is recomputed when cheap (its
  // nodes appended to `recompute`), else stored. Returns the kernel, or -1 when none can be
  // joined; `reads` then holds what i reads as it will be placed.
  int join_producers(size_t i, Reads& reads, std::vector<size_t>& recompute) {
    int target = reads.fused.empty() ? -1 : join_target(reads.fused);
    for (int attempt = 0; attempt < 2; ++attempt) {
      std::set<int> stored = reads.stored;
      std::set<ValueId> leaves = reads.leaves;
      std::vector<size_t> redo;
      std::vector<ValueId> materialize;
      std::vector<int> merges;
      for (ValueId o : reads.fused_values) {
        int g = group_of_value(o);
        if (target >= 0 && (g == find(target) || can_merge(g, target))) {
          merges.push_back(g);
          continue;
        }
        std::vector<size_t> chain;
        // (A matmul or gathering result cannot be recomputed: it is read from its buffer.)
        if (role(o) == Role::Elementwise && cheap_chain(o, g, chain)) {
          redo.insert(redo.end(), chain.begin(), chain.end());
          for (size_t c : chain) {
            for (ValueId co : region_.nodes[c].operands) {
              int cp = producer_[static_cast<size_t>(co)];
              if (cp < 0 || std::find(chain.begin(), chain.end(), static_cast<size_t>(cp)) == chain.end()) {
                auto d = view_base_groups(co);
                stored.insert(d.begin(), d.end());
                view_leaves(co, leaves);
              }
            }
          }
        } else {
          materialize.push_back(o);
          stored.insert(g);
          leaves.insert(o);
        }
      }
      bool ok = target < 0 || may_join(target, i, stored);
      for (int g : merges) {
        ok = ok &&
             !std::any_of(stored.begin(), stored.end(), [&](int r) { return find(r) == find(g) || depends(r, g); });
      }
      if (!ok) {
        target = -1;
        continue;
      }
      for (int g : merges) target = merge(g, target);
      for (ValueId o : materialize) must_[static_cast<size_t>(o)] = true;
      recompute = redo;
      reads.stored = stored;
      reads.leaves = leaves;
      break;
    }
    return target;
  }

  // A sibling of node i: one of the last 16 loop kernels over the same space that reads one of
  // the same stored values and may take i; -1 when there is none.
  int sibling(size_t i, const Shape& space, const Reads& reads) {
    if (reads.leaves.empty()) return -1;
    for (int g = static_cast<int>(groups_.size()) - 1; g >= 0 && g >= static_cast<int>(groups_.size()) - 16; --g) {
      const Group& gg = groups_[static_cast<size_t>(g)];
      if (gg.parent >= 0 || gg.kind != KernelKind::Loop || gg.space != space || !may_join(g, i, reads.stored)) continue;
      if (std::any_of(reads.leaves.begin(), reads.leaves.end(), [&](ValueId l) { return gg.leaves.count(l); }))
        return g;
    }
    return -1;
  }

  // An elementwise, reduction or gathering node joins a producer's kernel, else a sibling's,
  // else starts a loop kernel.
  void fuse(size_t i) {
    const ir::Node& n = region_.nodes[i];
    bool reduces = roles_[i] == Role::Reduce;
    Shape space = reduces ? region_.type(n.operands[0]).shape : region_.type(n.results[0]).shape;
    Reads reads = reads_of(i, space);
    std::vector<size_t> recompute;
    int target = join_producers(i, reads, recompute);
    if (target < 0) target = sibling(i, space, reads);
    if (target < 0) target = new_group(KernelKind::Loop, space);
    Group& gt = G(target);
    gt.nodes.push_back(i);
    gt.recomputed.insert(gt.recomputed.end(), recompute.begin(), recompute.end());
    gt.preds.insert(reads.stored.begin(), reads.stored.end());
    gt.leaves.insert(reads.leaves.begin(), reads.leaves.end());
    group_of_[i] = find(target);
    if (reduces) must_[static_cast<size_t>(n.results[0])] = true;
  }

  bool strided_operand(ValueId v, StridedView* sv, bool widening) {
    return strided_view(region_, probe_, producer_, v, sv, widening) && role(sv->base) != Role::Inline;
  }

  RegionSchedule finish() {
    RegionSchedule s = unplanned_schedule(region_);
    for (size_t i = 0; i < region_.nodes.size(); ++i) {
      const ir::Node& n = region_.nodes[i];
      for (ValueId v : n.results) {
        size_t vi = static_cast<size_t>(v);
        switch (roles_[i]) {
          case Role::Inline: s.storage[vi] = must_[vi] ? Storage::Slot : Storage::Inline; break;
          case Role::Global: s.storage[vi] = Storage::Global; break;
          case Role::View:
            if (group_of_[i] >= 0) {
              s.storage[vi] = Storage::Slot;
            } else if (n.op == Op::Reshape && role(n.operands[0]) != Role::View &&
                       role(n.operands[0]) != Role::Inline &&
                       s.storage[static_cast<size_t>(n.operands[0])] != Storage::None) {
              // A reshape of a computed value shares its bytes (need_buffer's rule). Not one of a
              // view or splat that a copy kernel stores: its readers were ordered after the view's
              // operands, not after the copy, and read it through its index math.
              s.storage[vi] = Storage::Alias;
              ValueId base = n.operands[0];
              while (s.storage[static_cast<size_t>(base)] == Storage::Alias)
                base = s.alias_of[static_cast<size_t>(base)];
              s.alias_of[vi] = base;
            } else {
              s.storage[vi] = Storage::View;
            }
            break;
          case Role::Control: s.storage[vi] = Storage::Slot; break;
          default: s.storage[vi] = must_[vi] ? Storage::Slot : Storage::None; break;
        }
      }
    }
    if (top_level_) {
      // A result computed by a kernel (or a collective) here and returned once is written into
      // the caller's buffer.
      for (size_t k = 0; k < region_.results.size(); ++k) {
        ValueId v = region_.results[k];
        int p = producer_[static_cast<size_t>(v)];
        bool once = std::count(region_.results.begin(), region_.results.end(), v) == 1;
        bool computed_here = p >= 0 && (roles_[static_cast<size_t>(p)] != Role::Control ||
                                        ir::is_collective(region_.nodes[static_cast<size_t>(p)].op));
        if (computed_here && once && s.storage[static_cast<size_t>(v)] == Storage::Slot) {
          s.storage[static_cast<size_t>(v)] = Storage::Output;
          s.output_index[static_cast<size_t>(v)] = static_cast<int32_t>(k);
        }
      }
    }
    order(s);
    if (options_.side_by_side_kernels) place_side_by_side(s);
    return s;
  }

  // Gathers kernels that do not depend on each other into runs of consecutive steps and marks
  // each run where at least two of its kernels are worth a thread (Kernel::beside_previous). A
  // run grows by the kernel steps after it that read nothing the run or the kernels passed over
  // compute: the next one whatever its size, a later one (moved up, at most
  // kSideBySideLookahead steps) only when it is worth a thread. Steps keep their order where no
  // run is marked. Control and wait steps end a run and are never passed over; a kernel split
  // into parts (its parts and their combination are a hand-off of their own) never joins one.
  void place_side_by_side(RegionSchedule& s) const {
    std::vector<Step>& steps = s.steps;
    auto joinable = [&](const Step& st) {
      return st.kind == Step::Kind::Kernel && s.kernels[st.index].split_chunks <= 1;
    };
    auto worth = [&](const Step& st) { return kernel_work(region_, s.kernels[st.index]) >= kMinParallelWork; };
    auto computes = [&](const Step& st, std::set<ValueId>& into) {
      for (size_t n : s.kernels[st.index].nodes)
        into.insert(region_.nodes[n].results.begin(), region_.nodes[n].results.end());
    };
    // What each kernel reads, found once: a kernel is looked at from every run whose window holds it.
    std::vector<std::set<ValueId>> kernel_reads(s.kernels.size());
    for (const Step& st : steps) {
      if (st.kind == Step::Kind::Kernel) kernel_reads[st.index] = reads(s, st);
    }
    auto reads_none = [&](const Step& st, const std::set<ValueId>& values) {
      const std::set<ValueId>& r = kernel_reads[st.index];
      return std::none_of(r.begin(), r.end(), [&](ValueId v) { return values.count(v) > 0; });
    };
    for (size_t i = 0; i < steps.size();) {
      if (!joinable(steps[i])) {
        ++i;
        continue;
      }
      size_t end = i + 1;  // the run: steps [i, end)
      size_t window = std::min(steps.size(), i + kSideBySideLookahead);
      std::vector<Step> before(steps.begin() + static_cast<long>(i), steps.begin() + static_cast<long>(window));
      std::set<ValueId> run, passed;
      computes(steps[i], run);
      for (size_t j = end; j < window && steps[j].kind == Step::Kind::Kernel; ++j) {
        bool independent = joinable(steps[j]) && reads_none(steps[j], run) && reads_none(steps[j], passed);
        if (independent && (j == end || worth(steps[j]))) {
          std::rotate(steps.begin() + static_cast<long>(end), steps.begin() + static_cast<long>(j),
                      steps.begin() + static_cast<long>(j) + 1);
          computes(steps[end++], run);
        } else {
          computes(steps[j], passed);
        }
      }
      if (std::count_if(steps.begin() + static_cast<long>(i), steps.begin() + static_cast<long>(end), worth) < 2) {
        std::copy(before.begin(), before.end(), steps.begin() + static_cast<long>(i));
        ++i;
        continue;
      }
      for (size_t t = i + 1; t < end; ++t) s.kernels[steps[t].index].beside_previous = true;
      i = end;
    }
    // Kernels numbered in running order again.
    std::vector<Kernel> running;
    for (Step& st : steps) {
      if (st.kind != Step::Kind::Kernel) continue;
      running.push_back(std::move(s.kernels[st.index]));
      st.index = running.size() - 1;
    }
    s.kernels = std::move(running);
  }

  // Kernels and steps in an order that respects every dependency (a topological sort of the
  // groups, taking the earliest-created ready group first so the order stays close to the
  // program's).
  // The ready group that comes first: the one leading to the earliest collective (so that
  // collectives start as early as their operands allow), then the first created.
  void order(RegionSchedule& s) {
    std::vector<int> live;
    for (int g = 0; g < static_cast<int>(groups_.size()); ++g) {
      if (groups_[static_cast<size_t>(g)].parent < 0) live.push_back(g);
    }
    std::map<int, std::set<int>> preds;
    for (int g : live) {
      for (int p : groups_[static_cast<size_t>(g)].preds) {
        if (find(p) != g) preds[g].insert(find(p));
      }
    }
    std::map<int, int> first_collective;  // the earliest collective group each group leads to
    for (int g : live) {
      int c = groups_[static_cast<size_t>(g)].control_node;
      first_collective[g] = c >= 0 && ir::is_collective(region_.nodes[static_cast<size_t>(c)].op) ? g : INT_MAX;
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (int g : live) {
        for (int p : preds[g]) {
          if (first_collective[g] < first_collective[p]) {
            first_collective[p] = first_collective[g];
            changed = true;
          }
        }
      }
    }
    std::set<int> done;
    while (done.size() < live.size()) {
      int best = -1;
      for (int g : live) {
        if (done.count(g)) continue;
        bool ready = std::all_of(preds[g].begin(), preds[g].end(), [&](int p) { return done.count(p) > 0; });
        if (ready && (best < 0 || first_collective[g] < first_collective[best])) best = g;
      }
      if (best < 0) detail::fail("fuse", "internal error: the kernel dependency graph has a cycle");
      emit(s, groups_[static_cast<size_t>(best)]);
      done.insert(best);
    }
    if (top_level_ && options_.async_collectives) add_waits(s);
  }

  // The values step st reads: its nodes' operands and, through views, aliases and values that
  // are never stored, the values underneath.
  std::set<ValueId> reads(const RegionSchedule& s, const Step& st) const {
    std::vector<size_t> nodes;
    if (st.kind == Step::Kind::Kernel) {
      nodes = s.kernels[st.index].nodes;
      nodes.insert(nodes.end(), s.kernels[st.index].recomputed.begin(), s.kernels[st.index].recomputed.end());
    } else {
      nodes.push_back(st.index);
    }
    std::set<ValueId> out;
    std::function<void(ValueId)> read = [&](ValueId v) {
      if (!out.insert(v).second) return;
      int p = producer_[static_cast<size_t>(v)];
      Storage st = s.storage[static_cast<size_t>(v)];
      if (p >= 0 && (ir::is_view(region_.nodes[static_cast<size_t>(p)].op) || st == Storage::View ||
                     st == Storage::Alias || st == Storage::None)) {
        for (ValueId o : region_.nodes[static_cast<size_t>(p)].operands) read(o);
      }
    };
    for (size_t n : nodes) {
      for (ValueId o : region_.nodes[n].operands) read(o);
    }
    return out;
  }

  // A Wait step for each collective before the first later step that reads its result (at the
  // end when none does: the caller reads it), unless that is the very next step.
  void add_waits(RegionSchedule& s) const {
    std::vector<Step> out;
    std::vector<size_t> pending;  // collective nodes started and not yet waited for
    for (const Step& st : s.steps) {
      std::set<ValueId> r = pending.empty() ? std::set<ValueId>{} : reads(s, st);
      for (size_t i = 0; i < pending.size();) {
        if (r.count(region_.nodes[pending[i]].results[0])) {
          out.push_back({Step::Kind::Wait, pending[i]});
          pending.erase(pending.begin() + static_cast<long>(i));
        } else {
          ++i;
        }
      }
      out.push_back(st);
      if (st.kind == Step::Kind::Control && ir::is_collective(region_.nodes[st.index].op)) pending.push_back(st.index);
    }
    for (size_t n : pending) out.push_back({Step::Kind::Wait, n});
    // A collective waited for right after it starts overlaps nothing: it runs synchronously.
    s.steps.clear();
    for (const Step& st : out) {
      bool at_once = st.kind == Step::Kind::Wait && !s.steps.empty() && s.steps.back().kind == Step::Kind::Control &&
                     s.steps.back().index == st.index;
      if (!at_once) s.steps.push_back(st);
    }
  }

  // `nodes` less the elementwise ones whose values nobody reads: not stored and not used by
  // another node of the kernel (a chain that joined its producer's kernel and that every reader
  // recomputes, as tanh's 1 - h * h in W3's backward kernel; a conversion to f32 that every
  // product reading it does as it loads). Empty when the kernel computes nothing anyone reads.
  std::vector<size_t> without_unread_nodes(std::vector<size_t> nodes) const {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t j = nodes.size(); j-- > 0;) {
        size_t i = nodes[j];
        ValueId v = region_.nodes[i].results[0];
        bool read = roles_[i] != Role::Elementwise || must_[static_cast<size_t>(v)] ||
                    std::any_of(nodes.begin(), nodes.end(), [&](size_t c) {
                      const auto& ops = region_.nodes[c].operands;
                      return std::find(ops.begin(), ops.end(), v) != ops.end();
                    });
        if (!read) {
          nodes.erase(nodes.begin() + static_cast<long>(j));
          changed = true;
        }
      }
    }
    return nodes;
  }

  void emit(RegionSchedule& s, Group& g) {
    if (g.control_node >= 0) {
      s.steps.push_back({Step::Kind::Control, static_cast<size_t>(g.control_node)});
      return;
    }
    Kernel k;
    k.kind = g.kind;
    k.space = g.space;
    std::sort(g.nodes.begin(), g.nodes.end());
    k.nodes = without_unread_nodes(g.nodes);
    if (k.nodes.empty()) return;
    std::sort(g.recomputed.begin(), g.recomputed.end());
    g.recomputed.erase(std::unique(g.recomputed.begin(), g.recomputed.end()), g.recomputed.end());
    for (size_t c : g.recomputed) {
      if (!std::binary_search(k.nodes.begin(), k.nodes.end(), c)) k.recomputed.push_back(c);
    }
    k.root = g.root >= 0 ? static_cast<size_t>(g.root) : 0;
    k.operand_views = g.operand_views;
    // Threads split the outermost dimension unless a reduction folds it or the kernel is split.
    k.parallel = !k.space.empty() && k.space[0] > 1 && split_layout(region_, k).folded.empty();
    if (options_.split_reductions) split(k);
    if (k.split_chunks > 1) k.parallel = false;
    if (k.kind == KernelKind::Scatter && options_.sorted_scatter_min_indices > 0) {
      ScatterGeometry g = scatter_geometry(region_, region_.nodes[k.root]);
      if (g.count >= options_.sorted_scatter_min_indices) k.scratch_bytes = 4 * scatter_order_words(g);
    }
    s.steps.push_back({Step::Kind::Kernel, s.kernels.size()});
    s.kernels.push_back(std::move(k));
  }

  // Splits kernel k into parts (Kernel::split_chunks, split_over) where it is large enough: a
  // kernel whose reductions fold its outermost dimension over that dimension, or over a
  // product's columns where that gives more parts; a weight gradient alone over its images
  // where that gives more parts than its output channels (kMinSplitPixels); a product alone
  // over its depth where that gives more parts than its result's shares (kDepthShareRows).
  void split(Kernel& k) const {
    bool folds_outer = !split_layout(region_, k).folded.empty();
    std::vector<SplitOver> ways;
    if (folds_outer) ways.push_back(SplitOver::Outer);
    if (folds_outer && reductions_fold_columns(k)) ways.push_back(SplitOver::Columns);
    if (!folds_outer && lone_weight_gradient(k)) ways.push_back(SplitOver::Images);
    if (!folds_outer && lone_product(k)) ways.push_back(SplitOver::Depth);
    for (SplitOver way : ways) {
      Kernel candidate = k;
      candidate.split_over = way;
      int64_t chunks = split_chunk_count(candidate);
      if (way == SplitOver::Images && chunks <= k.space[0]) continue;
      if (way == SplitOver::Depth && chunks <= result_shares(k)) continue;
      if (chunks > k.split_chunks) {
        k.split_chunks = chunks;
        k.split_over = way;
      }
    }
  }

  // A plain matrix product whose every reduction folds its columns.
  bool reductions_fold_columns(const Kernel& k) const {
    if (k.kind != KernelKind::MatMul || region_.nodes[k.root].op != Op::MatMul || k.space.size() != 2) return false;
    return std::all_of(k.nodes.begin(), k.nodes.end(), [&](size_t n) {
      const ir::Node& node = region_.nodes[n];
      return ir::op_info(node.op).cls != OpClass::Reduce ||
             std::find(node.attrs.axes.begin(), node.attrs.axes.end(), 1) != node.attrs.axes.end();
    });
  }

  // A matrix product (no batch) with nothing after it in its kernel: its parts' partial products
  // need only be summed.
  bool lone_product(const Kernel& k) const {
    return k.kind == KernelKind::MatMul && region_.nodes[k.root].op == Op::MatMul && k.nodes.size() == 1 &&
           k.space.size() == 2;
  }

  // The shares threads cut a product's result into unsplit: its register tiles' rows, or its
  // panels of columns, whichever are more (kDepthShareRows).
  int64_t result_shares(const Kernel& k) const {
    return std::max(support::ceil_div<int64_t>(k.space[0], kDepthShareRows),
                    support::ceil_div<int64_t>(k.space[1], kDepthShareColumns));
  }

  // A convolution's weight gradient with nothing after it in its kernel: its parts' partial
  // gradients need only be summed.
  bool lone_weight_gradient(const Kernel& k) const {
    return k.kind == KernelKind::MatMul && region_.nodes[k.root].op == Op::Conv2dWeightGrad && k.nodes.size() == 1;
  }

  // How many parts kernel k is split into over k.split_over (0: none): see kMaxSplitChunks.
  // Not when a node of the kernel reads a folded result (it needs the whole sum), nor for
  // straight-line kernels.
  int64_t split_chunk_count(const Kernel& k) const {
    int64_t extent = split_extent(region_, k);
    if (k.kind == KernelKind::StraightLine || extent < 2) return 0;
    int64_t partial_elements = 0;
    for (size_t f : split_layout(region_, k).folded) {
      ir::ValueId v = region_.nodes[f].results[0];
      partial_elements += region_.type(v).numel();
      for (const std::vector<size_t>* nodes : {&k.nodes, &k.recomputed}) {
        for (size_t n : *nodes) {
          const auto& ops = region_.nodes[n].operands;
          if (std::find(ops.begin(), ops.end(), v) != ops.end()) return 0;
        }
      }
    }
    int64_t work = kernel_work(region_, k);
    if (work < kMinParallelWork) return 0;
    int64_t least = 1;
    if (k.split_over == SplitOver::Images) {
      const Shape& g = region_.type(region_.nodes[k.root].operands[1]).shape;
      least = support::ceil_div<int64_t>(kMinSplitPixels, std::max<int64_t>(1, g[2] * g[3]));
    }
    if (k.split_over == SplitOver::Columns) least = kMinSplitMatmulColumns;
    if (k.split_over == SplitOver::Outer && k.kind == KernelKind::MatMul) least = kMinSplitMatmulRows;
    int64_t most = kMaxSplitChunks;
    if (k.split_over == SplitOver::Depth) least = kMinSplitDepth, most = kTunedThreads;
    int64_t chunks =
        std::min({most, extent / least, work / kSplitChunkWork, work / (8 * std::max<int64_t>(1, partial_elements))});
    return chunks >= 2 ? chunks : 0;
  }

  const ir::Region& region_;
  bool top_level_;
  FusionOptions options_;
  std::vector<int32_t> producer_;
  std::vector<Role> roles_;
  std::vector<bool> must_;
  std::vector<int> group_of_;
  std::vector<Group> groups_;
  int last_effect_ = -1;  // the group of the last step holding an effect
  RegionSchedule probe_;  // provisional storage, for strided_view
};

}  // namespace

RegionSchedule unplanned_schedule(const ir::Region& r) {
  RegionSchedule s;
  size_t nv = r.types.size();
  s.storage.assign(nv, Storage::None);
  s.offset.assign(nv, -1);
  s.alias_of.assign(nv, -1);
  s.output_index.assign(nv, -1);
  for (ValueId p : r.params) s.storage[static_cast<size_t>(p)] = Storage::Param;
  return s;
}

std::vector<int32_t> producers(const ir::Region& r) {
  std::vector<int32_t> p(r.types.size(), -1);
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    for (ValueId v : r.nodes[i].results) p[static_cast<size_t>(v)] = static_cast<int32_t>(i);
  }
  return p;
}

bool is_direct_conv(const ir::Region& r, const ir::Node& n) {
  if (n.op != Op::Conv2d) return false;
  const Shape& w = r.type(n.operands[1]).shape;
  bool unpadded = std::all_of(n.attrs.padding.begin(), n.attrs.padding.end(), [](int64_t p) { return p == 0; });
  // Stride 1 and no dilation: the MatMul kernel, which the CPU runs as sliding windows.
  bool unit = std::all_of(n.attrs.strides.begin(), n.attrs.strides.end(), [](int64_t s) { return s == 1; }) &&
              std::all_of(n.attrs.dilation.begin(), n.attrs.dilation.end(), [](int64_t d) { return d == 1; });
  return unpadded && !unit && w[1] * w[2] * w[3] <= kMaxUnrolledTaps;
}

bool async_collectives_by_default() { return support::enabled(support::Setting::async_collectives); }

RegionSchedule schedule(const ir::Region& r, bool top_level, const FusionOptions& options) {
  if (!top_level && options.straight_line_regions && straight_line_region(r)) {
    RegionSchedule s = straight_line_schedule(r);
    plan_memory(r, s, options);
    return s;
  }
  RegionSchedule s = Fuser(r, top_level, options).run();
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    if (!has_regions(r.nodes[i].op)) continue;
    for (const ir::Region& sub : r.nodes[i].regions) s.nested[i].push_back(schedule(sub, false, options));
  }
  plan_memory(r, s, options);
  return s;
}

}  // namespace fluxion::kernel
