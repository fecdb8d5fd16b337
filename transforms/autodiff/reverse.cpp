// Reverse mode: the forward program, then one adjoint contribution per active use, walked
// backwards. Activity analysis keeps the adjoint program to what the caller asked for.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "fluxion/error.h"
#include "transforms/autodiff/autodiff.h"
#include "transforms/autodiff/vjp_rules.h"

namespace fluxion::autodiff {

std::vector<bool> varied_values(const ir::Region& f, const std::vector<bool>& wrt) {
  std::vector<bool> varied(f.types.size(), false);
  for (size_t i = 0; i < f.params.size(); ++i) varied[static_cast<size_t>(f.params[i])] = wrt[i];
  for (const ir::Node& n : f.nodes) {
    bool any = false;
    for (ir::ValueId v : n.operands) any = any || varied[static_cast<size_t>(v)];
    if (!any || !ir::is_differentiable(n.op)) continue;
    for (ir::ValueId r : n.results) varied[static_cast<size_t>(r)] = is_float(f.type(r).dtype);
  }
  return varied;
}

namespace {

// Activity, backward half: the values that the results with an adjoint depend on.
std::vector<bool> useful_values(const ir::Region& f, const std::vector<ir::ValueId>& out_adjoints) {
  std::vector<bool> useful(f.types.size(), false);
  for (size_t i = 0; i < f.results.size(); ++i) {
    if (out_adjoints[i] >= 0) useful[static_cast<size_t>(f.results[i])] = true;
  }
  for (size_t i = f.nodes.size(); i-- > 0;) {
    const ir::Node& n = f.nodes[i];
    bool any = false;
    for (ir::ValueId r : n.results) any = any || useful[static_cast<size_t>(r)];
    if (!any) continue;
    for (ir::ValueId v : n.operands) useful[static_cast<size_t>(v)] = true;
  }
  return useful;
}

// A contribution that is an adjoint placed into zeros along one axis (the reverse of a unit-
// stride slice on that axis): the placed value and its [lo, lo + size) range.
struct Placed {
  ir::ValueId part;
  int64_t axis, lo, size;
};

bool as_placed(const ir::Region& r, ir::ValueId v, Placed* out) {
  for (size_t i = r.nodes.size(); i-- > 0;) {
    const ir::Node& n = r.nodes[i];
    if (n.results.empty() || n.results[0] != v) continue;  // a loop or cond may yield nothing
    if (n.op != ir::Op::Pad) return false;
    int64_t axis = -1;
    for (size_t d = 0; d < n.attrs.strides.size(); ++d) {
      bool padded = n.attrs.padding[2 * d] != 0 || n.attrs.padding[2 * d + 1] != 0;
      if (n.attrs.strides[d] != 1 || (padded && axis >= 0)) return false;
      if (padded) axis = static_cast<int64_t>(d);
    }
    if (axis < 0) return false;
    *out = {n.operands[0], axis, n.attrs.padding[2 * static_cast<size_t>(axis)],
            r.type(n.operands[0]).shape[static_cast<size_t>(axis)]};
    return true;
  }
  return false;
}

// The total adjoint of a value from its contributions. Adjoints of disjoint slices along one
// axis (the gates of an LSTM cut from one matmul) are written by parts into one buffer with a
// concat, instead of each being padded to full size and the copies added.
ir::ValueId accumulate(Builder& b, const ir::Region& r, const std::vector<ir::ValueId>& contributions) {
  std::vector<Placed> placed;
  std::vector<ir::ValueId> rest;
  for (ir::ValueId c : contributions) {
    Placed p;
    if (as_placed(r, c, &p) && (placed.empty() || placed[0].axis == p.axis)) {
      placed.push_back(p);
    } else {
      rest.push_back(c);
    }
  }
  if (placed.size() >= 2) {
    std::sort(placed.begin(), placed.end(), [](const Placed& x, const Placed& y) { return x.lo < y.lo; });
    bool disjoint = true;
    for (size_t i = 1; i < placed.size(); ++i)
      disjoint = disjoint && placed[i].lo >= placed[i - 1].lo + placed[i - 1].size;
    if (disjoint) {
      Shape full = b.shape(contributions[0]);
      size_t ax = static_cast<size_t>(placed[0].axis);
      std::vector<ir::ValueId> pieces;
      int64_t cursor = 0;
      auto gap = [&](int64_t size) {
        Shape s = full;
        s[ax] = size;
        pieces.push_back(b.splat(0, TensorType{b.type(contributions[0]).dtype, s}));
      };
      for (const Placed& p : placed) {
        if (p.lo > cursor) gap(p.lo - cursor);
        pieces.push_back(p.part);
        cursor = p.lo + p.size;
      }
      if (cursor < full[ax]) gap(full[ax] - cursor);
      ir::Attrs a;
      a.axes = {placed[0].axis};
      rest.push_back(pieces.size() == 1 ? pieces[0] : b.op(ir::Op::Concat, pieces, std::move(a)));
      return b.sum_all(rest);
    }
  }
  return b.sum_all(contributions);
}

}  // namespace

std::vector<ir::ValueId> emit_vjp(ir::Region& target, const ir::Region& f, const std::vector<ir::ValueId>& args,
                                  const std::vector<ir::ValueId>& out_adjoints, const std::vector<bool>& wrt,
                                  std::vector<ir::ValueId>* outputs, std::vector<size_t>* inlined_nodes) {
  std::vector<bool> active = varied_values(f, wrt);
  std::vector<bool> useful = useful_values(f, out_adjoints);
  for (size_t v = 0; v < active.size(); ++v) active[v] = active[v] && useful[v];

  // The forward computation, inlined into target.
  std::vector<size_t> node_index;
  std::vector<ir::ValueId> results = ir::inline_region(target, f, args, &node_index);
  if (outputs) *outputs = results;
  if (inlined_nodes) *inlined_nodes = node_index;

  // With collectives, which values are the same on every rank (vjp_collective.cpp).
  bool collectives = ir::has_collectives(f);
  std::vector<bool> invariant = collectives ? invariant_values(f) : std::vector<bool>(f.types.size(), false);
  int64_t ranks = collectives ? job_ranks(f) : 1;

  // Adjoint contributions, keyed by f's value ids, holding target's value ids.
  Builder b(target);
  std::unordered_map<ir::ValueId, std::vector<ir::ValueId>> contributions;
  for (size_t i = 0; i < f.results.size(); ++i) {
    if (out_adjoints[i] >= 0 && active[static_cast<size_t>(f.results[i])]) {
      contributions[f.results[i]].push_back(out_adjoints[i]);
    }
  }
  for (size_t k = f.nodes.size(); k-- > 0;) {
    const ir::Node& fn = f.nodes[k];
    std::vector<ir::ValueId> adjoints;
    bool any = false;
    for (ir::ValueId r : fn.results) {
      auto it = contributions.find(r);
      bool has = active[static_cast<size_t>(r)] && it != contributions.end();
      // A value used k times gets its k contributions summed once, here.
      adjoints.push_back(has ? accumulate(b, target, it->second) : -1);
      any = any || has;
    }
    if (!any) continue;
    std::vector<bool> want;
    for (ir::ValueId v : fn.operands) want.push_back(active[static_cast<size_t>(v)]);
    for (const ir::Region& sub : fn.regions) {
      if (ir::has_collectives(sub)) {
        detail::fail(ir::op_name(fn.op),
                     "reverse mode through collectives inside scan, while_loop, cond or a custom "
                     "rule is not supported (forward mode is); move the collective out of the region");
      }
    }
    // A copy: rules append to target.nodes, which would invalidate a reference into it.
    ir::Node n = target.nodes[node_index[k]];
    bool is_collective = ir::is_collective(n.op);
    size_t first = target.nodes.size();
    std::vector<ir::ValueId> grads =
        is_collective
            ? vjp_collective(b, n, adjoints[0], !fn.operands.empty() && invariant[static_cast<size_t>(fn.operands[0])])
            : vjp(b, n, node_index[k], adjoints, want);
    // The forward pass above printed; a rule's recomputation does not (a custom_vjp's backward
    // region is the user's, and prints what it says).
    if (n.op != ir::Op::CustomVjp && ir::has_effects(n)) ir::remove_effects(target, first);
    for (size_t j = 0; j < grads.size(); ++j) {
      if (grads[j] < 0) continue;
      // An invariant operand of a varying computation was used on every rank: its adjoint is
      // the sum of the ranks' contributions.
      bool implicit_broadcast = !is_collective && !fn.results.empty() &&
                                invariant[static_cast<size_t>(fn.operands[j])] &&
                                !invariant[static_cast<size_t>(fn.results[0])];
      contributions[fn.operands[j]].push_back(implicit_broadcast ? collective(b, ir::Op::AllReduceSum, grads[j], ranks)
                                                                 : grads[j]);
    }
  }
  std::vector<ir::ValueId> input_adjoints;
  for (size_t i = 0; i < f.params.size(); ++i) {
    auto it = contributions.find(f.params[i]);
    input_adjoints.push_back(wrt[i] && it != contributions.end() ? accumulate(b, target, it->second) : -1);
  }
  return input_adjoints;
}

ir::Region value_and_grad(const ir::Region& f, const std::vector<bool>& wrt, bool has_aux) {
  bool one_result = has_aux ? !f.results.empty() : f.results.size() == 1;
  if (!one_result || f.type(f.results[0]).rank() != 0 || !is_float(f.type(f.results[0]).dtype)) {
    std::string got;
    for (ir::ValueId v : f.results) got += (got.empty() ? "" : ", ") + f.type(v).str();
    detail::fail("grad", std::string(has_aux ? "the function must return a float scalar and its auxiliary values"
                                             : "the function must return one float scalar") +
                             ", it returns (" + got + ")");
  }
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (wrt[i] && !is_float(f.type(f.params[i]).dtype)) {
      detail::fail("grad", "argument " + std::to_string(i) + " is " + f.type(f.params[i]).str() +
                               ": only float arguments can be differentiated");
    }
  }
  ir::Region out;
  std::vector<ir::ValueId> args;
  for (ir::ValueId p : f.params) args.push_back(out.add_param(f.type(p)));
  Builder b(out);
  std::vector<ir::ValueId> seeds(f.results.size(), -1);
  seeds[0] = b.splat(1, f.type(f.results[0]));
  std::vector<ir::ValueId> value;
  std::vector<ir::ValueId> grads = emit_vjp(out, f, args, seeds, wrt, &value);
  out.results = {value[0]};
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (wrt[i]) out.results.push_back(grads[i] >= 0 ? grads[i] : b.splat(0, f.type(f.params[i])));
  }
  // The auxiliary results, undifferentiated, after the gradients.
  out.results.insert(out.results.end(), value.begin() + 1, value.end());
  return out;
}

}  // namespace fluxion::autodiff
