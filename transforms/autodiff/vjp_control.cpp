// Reverse rules of control flow. scan (and so fori_loop): a reverse scan that reads what the
// forward scan saved. Policy: save every step's incoming carry and the result of every sizeable
// matmul or convolution in the body (residuals); the reverse body recomputes the rest of the
// body's values from them. Elementwise values are cheap to recompute and fuse into the reverse
// step's kernels; a matmul is not (recomputing the LSTM's gate matmul would add 27% to its
// training step's multiply-adds), so its result is stored, as the fuser stores expensive values.
#include <algorithm>

#include "fluxion/error.h"
#include "transforms/autodiff/autodiff.h"
#include "transforms/autodiff/vjp_rules.h"

namespace fluxion::autodiff {
namespace {

using ir::ValueId;

TensorType stacked(TensorType t, int64_t length) {
  t.shape.insert(t.shape.begin(), length);
  return t;
}

TensorType unstacked(TensorType t) {
  t.shape.erase(t.shape.begin());
  return t;
}

// Products smaller than this are recomputed (cheaper than a store and a load per step), and
// residuals stop being stored once the stacked ones of a loop reach the byte budget.
constexpr int64_t kResidualMinMacs = 4096;
constexpr int64_t kResidualBudgetBytes = int64_t{256} << 20;

// Follows `k`'s result through its only user while that user is an add or a sub of the same
// type (an epilogue: a bias, the LSTM's hoisted input gates), whose reverse rules need no
// operand values: storing the epilogue's result lets the reverse body drop the epilogue too.
size_t through_epilogue(const ir::Region& body, size_t k) {
  for (;;) {
    ValueId v = body.nodes[k].results[0];
    size_t user = body.nodes.size(), uses = 0;
    for (size_t u = k + 1; u < body.nodes.size(); ++u)
      for (ValueId o : body.nodes[u].operands)
        if (o == v) ++uses, user = u;
    for (ValueId r : body.results) uses += r == v;
    if (uses != 1 || user == body.nodes.size()) return k;
    const ir::Node& n = body.nodes[user];
    if ((n.op != ir::Op::Add && n.op != ir::Op::Sub) || !(body.type(n.results[0]) == body.type(v))) return k;
    k = user;
  }
}

// The body's nodes whose results the forward scan stores for the reverse scan: float matmul
// and conv2d results whose products are large enough (or the epilogue after them), within the
// budget.
std::vector<size_t> residual_nodes(const ir::Region& body, int64_t length) {
  std::vector<size_t> out;
  int64_t bytes = 0;
  for (size_t k = 0; k < body.nodes.size(); ++k) {
    const ir::Node& n = body.nodes[k];
    if ((n.op != ir::Op::MatMul && n.op != ir::Op::Conv2d) || !is_float(body.type(n.results[0]).dtype)) continue;
    const TensorType& t = body.type(n.results[0]);
    int64_t inner = body.type(n.operands[0]).shape.empty() ? 1 : body.type(n.operands[0]).shape.back();
    if (n.op == ir::Op::Conv2d) {
      const Shape& w = body.type(n.operands[1]).shape;
      inner = numel(w) / std::max<int64_t>(1, w[0]);
    }
    int64_t stacked_bytes = t.numel() * dtype_size(t.dtype) * length;
    if (t.numel() * inner < kResidualMinMacs || bytes + stacked_bytes > kResidualBudgetBytes) continue;
    size_t stored = through_epilogue(body, k);
    // Two products summed into one epilogue (an LSTM cell's two gate matmuls) store it once.
    if (std::find(out.begin(), out.end(), stored) != out.end()) continue;
    bytes += stacked_bytes;
    out.push_back(stored);
  }
  return out;
}

}  // namespace

std::vector<ValueId> vjp_scan(Builder& b, const ir::Node& n, size_t index, const std::vector<ValueId>& adjoints,
                              const std::vector<bool>& want) {
  const ir::Attrs& a = n.attrs;
  size_t nc = static_cast<size_t>(a.carries), nx = static_cast<size_t>(a.xs);
  size_t nk = n.operands.size() - nc - nx;
  size_t ny = n.regions[0].results.size() - nc;
  int64_t length = a.length;
  auto operand = [&](size_t i) { return n.operands[i]; };

  // 1. The forward scan also returns, stacked, the carry entering each step and the residuals.
  std::vector<ValueId> saved, stored;
  std::vector<size_t> residuals = residual_nodes(b.region().nodes[index].regions[0], length);
  {
    ir::Region& r = b.region();
    ir::Region& body = r.nodes[index].regions[0];
    for (size_t j = 0; j < nc; ++j) body.results.push_back(body.params[1 + j]);
    for (size_t k : residuals) body.results.push_back(body.nodes[k].results[0]);
    for (size_t j = 0; j < nc; ++j) {
      saved.push_back(r.new_value(stacked(r.type(operand(j)), length)));
      r.nodes[index].results.push_back(saved.back());
    }
    for (size_t k : residuals) {
      TensorType t = body.type(body.nodes[k].results[0]);
      stored.push_back(r.new_value(stacked(t, length)));
      r.nodes[index].results.push_back(stored.back());
    }
  }
  const ir::Region& fwd_body = b.region().nodes[index].regions[0];

  // 2. Which adjoints flow: every float carry (a carry can become varied inside the loop),
  //    the per-step inputs and captured values that are active, the float per-step outputs.
  std::vector<size_t> fc, kx, kk, fy;
  for (size_t j = 0; j < nc; ++j) {
    if (is_float(b.type(operand(j)).dtype)) fc.push_back(j);
  }
  for (size_t i = 0; i < nx; ++i) {
    if (want[nc + i]) kx.push_back(i);
  }
  for (size_t k = 0; k < nk; ++k) {
    if (want[nc + nx + k]) kk.push_back(k);
  }
  for (size_t y = 0; y < ny; ++y) {
    if (is_float(fwd_body.type(fwd_body.results[nc + y]).dtype)) fy.push_back(y);
  }

  // 3. The reverse body: params [i, d carries, d captures (accumulated), carries entering the
  //    step, per-step inputs, adjoints of per-step outputs, residuals, captures].
  ir::Region rb;
  ValueId i = rb.add_param(TensorType{DType::i32, {}});
  std::vector<ValueId> dc(nc, -1), dk, c(nc), x(nx), dy(ny, -1), res_params, k(nk);
  for (size_t j : fc) dc[j] = rb.add_param(b.type(operand(j)));
  for (size_t q : kk) dk.push_back(rb.add_param(b.type(operand(nc + nx + q))));
  for (size_t j = 0; j < nc; ++j) c[j] = rb.add_param(b.type(operand(j)));
  for (size_t q = 0; q < nx; ++q) x[q] = rb.add_param(unstacked(b.type(operand(nc + q))));
  for (size_t y : fy) dy[y] = rb.add_param(fwd_body.type(fwd_body.results[nc + y]));
  for (size_t kr : residuals) res_params.push_back(rb.add_param(fwd_body.type(fwd_body.nodes[kr].results[0])));
  for (size_t q = 0; q < nk; ++q) k[q] = rb.add_param(b.type(operand(nc + nx + q)));

  std::vector<ValueId> args{i};
  args.insert(args.end(), c.begin(), c.end());
  args.insert(args.end(), x.begin(), x.end());
  args.insert(args.end(), k.begin(), k.end());
  std::vector<ValueId> out_adjoints = dc;
  out_adjoints.insert(out_adjoints.end(), dy.begin(), dy.end());
  out_adjoints.resize(fwd_body.results.size(), -1);  // the saved carries need no adjoint
  std::vector<bool> wrt(args.size(), false);
  for (size_t j : fc) wrt[1 + j] = true;
  for (size_t q : kx) wrt[1 + nc + q] = true;
  for (size_t q : kk) wrt[1 + nc + nx + q] = true;
  ir::Region body_copy = fwd_body;  // emit_vjp reads it while the target region grows
  std::vector<size_t> inlined;
  std::vector<ValueId> g = emit_vjp(rb, body_copy, args, out_adjoints, wrt, nullptr, &inlined);
  // The recomputed residuals are replaced by the stored ones; their recomputation is then dead
  // (the matmul and conv rules read only the operands) and DCE removes it.
  for (size_t q = 0; q < residuals.size(); ++q) {
    ValueId recomputed = rb.nodes[inlined[residuals[q]]].results[0];
    for (ir::Node& node : rb.nodes)
      for (ValueId& v : node.operands)
        if (v == recomputed) v = res_params[q];
    for (ValueId& v : rb.results)
      if (v == recomputed) v = res_params[q];
  }

  Builder rbb(rb);
  auto or_zero = [&](ValueId v, ValueId like) { return v >= 0 ? v : rbb.splat_like(0, like); };
  for (size_t j : fc) rb.results.push_back(or_zero(g[1 + j], c[j]));
  for (size_t q = 0; q < kk.size(); ++q) {
    ValueId contrib = g[1 + nc + nx + kk[q]];
    rb.results.push_back(contrib >= 0 ? rbb.add(dk[q], contrib) : dk[q]);
  }
  for (size_t q : kx) rb.results.push_back(or_zero(g[1 + nc + q], x[q]));

  // 4. The reverse scan.
  std::vector<ValueId> operands;
  for (size_t j : fc) operands.push_back(adjoints[j] >= 0 ? adjoints[j] : b.splat_like(0, operand(j)));
  for (size_t q : kk) operands.push_back(b.splat_like(0, operand(nc + nx + q)));
  operands.insert(operands.end(), saved.begin(), saved.end());
  for (size_t q = 0; q < nx; ++q) operands.push_back(operand(nc + q));
  for (size_t y : fy) {
    ValueId adj = adjoints[nc + y];
    operands.push_back(adj >= 0 ? adj : b.splat(0, stacked(fwd_body.type(fwd_body.results[nc + y]), length)));
  }
  operands.insert(operands.end(), stored.begin(), stored.end());
  for (size_t q = 0; q < nk; ++q) operands.push_back(operand(nc + nx + q));
  ir::Attrs ra;
  ra.length = length;
  ra.carries = static_cast<int64_t>(fc.size() + kk.size());
  ra.xs = static_cast<int64_t>(nc + nx + fy.size() + stored.size());
  ra.reverse = !a.reverse;
  std::vector<ir::Region> regions;
  regions.push_back(std::move(rb));
  std::vector<ValueId> res = b.region().add(ir::Op::Scan, operands, ra, {}, std::move(regions));

  // 5. Contributions: initial carries, per-step inputs (stacked), captures (summed over steps).
  std::vector<ValueId> out(n.operands.size(), -1);
  size_t r = 0;
  for (size_t j : fc) {
    if (want[j]) out[j] = res[r];
    ++r;
  }
  for (size_t q : kk) out[nc + nx + q] = res[r++];
  for (size_t q : kx) out[nc + q] = res[r++];
  return out;
}

// cond: a cond on the same predicate whose branches are the reverse of the forward branches
// (each recomputes its branch's forward values, then its adjoints).
std::vector<ValueId> vjp_cond(Builder& b, const ir::Node& n, const std::vector<ValueId>& adjoints,
                              const std::vector<bool>& want) {
  size_t na = n.operands.size() - 1;
  const ir::Region& then_body = n.regions[0];
  std::vector<size_t> fr;  // float results, whose adjoints flow into the branches
  for (size_t r = 0; r < n.results.size(); ++r) {
    if (is_float(then_body.type(then_body.results[r]).dtype)) fr.push_back(r);
  }
  std::vector<size_t> wanted;
  for (size_t i = 0; i < na; ++i) {
    if (want[1 + i]) wanted.push_back(i);
  }
  std::vector<ir::Region> regions;
  for (const ir::Region& branch : n.regions) {
    ir::Region rb;
    std::vector<ValueId> args, out_adjoints(branch.results.size(), -1);
    for (size_t i = 0; i < na; ++i) args.push_back(rb.add_param(branch.type(branch.params[i])));
    for (size_t r : fr) out_adjoints[r] = rb.add_param(branch.type(branch.results[r]));
    std::vector<bool> wrt(want.begin() + 1, want.end());
    std::vector<ValueId> g = emit_vjp(rb, branch, args, out_adjoints, wrt, nullptr);
    Builder rbb(rb);
    for (size_t i : wanted) rb.results.push_back(g[i] >= 0 ? g[i] : rbb.splat_like(0, args[i]));
    regions.push_back(std::move(rb));
  }
  std::vector<ValueId> operands(n.operands.begin(), n.operands.end());
  for (size_t r : fr) operands.push_back(adjoints[r] >= 0 ? adjoints[r] : b.splat_like(0, n.results[r]));
  std::vector<ValueId> res = b.region().add(ir::Op::Cond, operands, {}, {}, std::move(regions));
  std::vector<ValueId> out(n.operands.size(), -1);
  for (size_t q = 0; q < wanted.size(); ++q) out[1 + wanted[q]] = res[q];
  return out;
}

// custom_vjp: the user's backward region, inlined, in place of differentiating the primal.
// Captured values (operands past the arguments) are constants of the rule.
std::vector<ValueId> vjp_custom(Builder& b, const ir::Node& n, const std::vector<ValueId>& adjoints,
                                const std::vector<bool>& want) {
  size_t na = static_cast<size_t>(n.attrs.carries);
  std::vector<ValueId> args(n.operands.begin(), n.operands.begin() + static_cast<long>(na));
  args.insert(args.end(), n.results.begin(), n.results.end());
  for (size_t r = 0; r < n.results.size(); ++r) args.push_back(adjoints[r] >= 0 ? adjoints[r] : b.splat_like(0, n.results[r]));
  args.insert(args.end(), n.operands.begin() + static_cast<long>(na), n.operands.end());
  std::vector<ValueId> g = ir::inline_region(b.region(), n.regions[1], args);
  std::vector<ValueId> out(n.operands.size(), -1);
  for (size_t i = 0; i < na; ++i) {
    if (want[i]) out[i] = g[i];
  }
  return out;
}

// custom_jvp in reverse mode: the tangent rule is linear in the tangents, so its transpose (the
// reverse rule of the tangent region with respect to its tangent parameters, evaluated at zero
// tangents) is the reverse rule the user's tangent rule implies.
std::vector<ValueId> vjp_custom_jvp(Builder& b, const ir::Node& n, const std::vector<ValueId>& adjoints,
                                    const std::vector<bool>& want) {
  size_t na = static_cast<size_t>(n.attrs.carries);
  const ir::Region& tangent = n.regions[1];
  std::vector<ValueId> args(n.operands.begin(), n.operands.begin() + static_cast<long>(na));
  for (size_t i = 0; i < na; ++i) args.push_back(b.splat_like(0, n.operands[i]));
  args.insert(args.end(), n.operands.begin() + static_cast<long>(na), n.operands.end());
  std::vector<bool> wrt(args.size(), false);
  for (size_t i = 0; i < na; ++i) wrt[na + i] = want[i];
  std::vector<ValueId> out_adjoints = adjoints;
  ir::Region rule = tangent;  // emit_vjp reads it while the target region grows
  std::vector<ValueId> g = emit_vjp(b.region(), rule, args, out_adjoints, wrt, nullptr);
  std::vector<ValueId> out(n.operands.size(), -1);
  for (size_t i = 0; i < na; ++i) {
    if (want[i]) out[i] = g[na + i];
  }
  return out;
}

// while with max_iters: the same loop as a scan of max_iters steps whose steps past the exit
// keep the carries unchanged (a running flag masks them), differentiated as a scan. The
// forward while still computes the value (and raises past max_iters); the scan recomputes it
// to save the carries the reverse pass reads.
std::vector<ValueId> vjp_while(Builder& b, const ir::Node& n, const std::vector<ValueId>& adjoints,
                               const std::vector<bool>& want) {
  if (n.attrs.max_iters < 0) {
    detail::fail("while", "reverse-mode differentiation of a while_loop needs a max_iters bound");
  }
  size_t nc = static_cast<size_t>(n.attrs.carries), nk = n.operands.size() - nc;
  const TensorType flag{DType::boolean, {}};
  ir::Region sb;
  sb.add_param(TensorType{DType::i32, {}});  // the step index, unused
  std::vector<ValueId> c, k;
  for (size_t j = 0; j < nc; ++j) c.push_back(sb.add_param(b.type(n.operands[j])));
  ir::ValueId running = sb.add_param(flag);
  for (size_t q = 0; q < nk; ++q) k.push_back(sb.add_param(b.type(n.operands[nc + q])));
  std::vector<ValueId> state = c;
  state.insert(state.end(), k.begin(), k.end());
  Builder sbb(sb);
  ValueId go = sbb.binary(ir::Op::And, running, ir::inline_region(sb, n.regions[0], state)[0]);
  std::vector<ValueId> next = ir::inline_region(sb, n.regions[1], state);
  for (size_t j = 0; j < nc; ++j) {
    sb.results.push_back(sbb.op(ir::Op::Select, {sbb.broadcast(go, sbb.shape(c[j])), next[j], c[j]}));
  }
  sb.results.push_back(go);

  std::vector<ValueId> operands(n.operands.begin(), n.operands.begin() + static_cast<long>(nc));
  operands.push_back(b.splat(1, flag));
  operands.insert(operands.end(), n.operands.begin() + static_cast<long>(nc), n.operands.end());
  ir::Attrs a;
  a.length = n.attrs.max_iters;
  a.carries = static_cast<int64_t>(nc + 1);
  std::vector<ir::Region> regions;
  regions.push_back(std::move(sb));
  b.region().add(ir::Op::Scan, operands, a, {}, std::move(regions));
  size_t index = b.region().nodes.size() - 1;
  ir::Node scan = b.region().nodes[index];

  std::vector<ValueId> scan_adjoints(adjoints.begin(), adjoints.begin() + static_cast<long>(nc));
  scan_adjoints.push_back(-1);
  std::vector<bool> scan_want(want.begin(), want.begin() + static_cast<long>(nc));
  scan_want.push_back(false);
  scan_want.insert(scan_want.end(), want.begin() + static_cast<long>(nc), want.end());
  std::vector<ValueId> g = vjp_scan(b, scan, index, scan_adjoints, scan_want);
  std::vector<ValueId> out(g.begin(), g.begin() + static_cast<long>(nc));
  out.insert(out.end(), g.begin() + static_cast<long>(nc) + 1, g.end());
  return out;
}

}  // namespace fluxion::autodiff
