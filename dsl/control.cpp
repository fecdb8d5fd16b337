// Recording of scan, while and cond: each traces its regions in nested frames, then gathers
// the Tensors the regions captured from the enclosing function into extra operands.
#include "fluxion/control.h"

#include <algorithm>
#include <string>

#include "dsl/trace.h"
#include "fluxion/error.h"
#include "fluxion/ops.h"

namespace fluxion::detail {
namespace {

// Rows [lo, hi) of x along its leading dimension.
Tensor rows(const Tensor& x, int64_t lo, int64_t hi, const std::source_location& loc) {
  return slice_axis(x, 0, lo, hi, 1, loc);
}

// scan as blocks of k steps (an outer scan over blocks, an inner scan per block) followed by
// the remaining steps. Blocks run first in either direction: forward they cover [0, q*k), in
// reverse [r, length), the steps a reverse scan reaches first.
std::vector<Tensor> checkpointed_scan(int64_t length, bool reverse, const std::vector<Tensor>& carries,
                                      const std::vector<Tensor>& xs, const RegionFn& body, int64_t k,
                                      const std::source_location& loc) {
  int64_t q = length / k, r = length % k;
  int64_t block_lo = reverse ? r : 0, rest_lo = reverse ? 0 : q * k;
  size_t nc = carries.size();
  std::vector<Tensor> block_xs;
  for (const Tensor& x : xs) {
    Shape s = x.shape();
    s[0] = k;
    s.insert(s.begin(), q);
    block_xs.push_back(reshape(rows(x, block_lo, block_lo + q * k, loc), s, loc));
  }
  auto outer = [&](const std::vector<Tensor>& p) {
    Tensor block = p[0];
    auto inner = [&](const std::vector<Tensor>& pi) {
      std::vector<Tensor> args = pi;
      args[0] = add(add(mul(block, scalar(static_cast<double>(k), DType::i32, loc), loc), pi[0], loc),
                    scalar(static_cast<double>(block_lo), DType::i32, loc), loc);
      return body(args);
    };
    std::vector<Tensor> c(p.begin() + 1, p.begin() + 1 + static_cast<long>(nc));
    std::vector<Tensor> x(p.begin() + 1 + static_cast<long>(nc), p.end());
    return emit_scan(k, reverse, c, x, inner, 0, loc);
  };
  std::vector<Tensor> blocks = emit_scan(q, reverse, carries, block_xs, outer, 0, loc);
  std::vector<Tensor> out(blocks.begin(), blocks.begin() + static_cast<long>(nc));
  std::vector<Tensor> ys;
  for (size_t j = nc; j < blocks.size(); ++j) {
    Shape s = blocks[j].shape();
    s.erase(s.begin());
    s[0] = q * k;
    ys.push_back(reshape(blocks[j], s, loc));
  }
  if (r > 0) {
    std::vector<Tensor> rest_xs;
    for (const Tensor& x : xs) rest_xs.push_back(rows(x, rest_lo, rest_lo + r, loc));
    auto shifted = [&](const std::vector<Tensor>& p) {
      std::vector<Tensor> args = p;
      args[0] = offset_index(p[0], rest_lo, loc);
      return body(args);
    };
    std::vector<Tensor> rest = emit_scan(r, reverse, out, rest_xs, shifted, 0, loc);
    for (size_t j = 0; j < nc; ++j) out[j] = rest[j];
    for (size_t j = 0; j < ys.size(); ++j) {
      ys[j] = reverse ? concat({rest[nc + j], ys[j]}, 0, loc) : concat({ys[j], rest[nc + j]}, 0, loc);
    }
  }
  out.insert(out.end(), ys.begin(), ys.end());
  return out;
}

}  // namespace

std::vector<Tensor> emit_scan(int64_t length, bool reverse, const std::vector<Tensor>& carries,
                              const std::vector<Tensor>& xs, const RegionFn& body, int64_t checkpoint_every,
                              const std::source_location& loc) {
  if (length < 0) fail("scan", "the trip count is unknown: give ScanOptions::length when there are no xs", &loc);
  for (const TensorType& t : types_of(xs, "scan", loc)) {
    if (t.rank() == 0 || t.shape[0] != length) {
      fail("scan", "per-step input " + t.str() + " must have leading dimension " + std::to_string(length), &loc);
    }
  }
  if (checkpoint_every < 0) fail("scan", "checkpoint every " + std::to_string(checkpoint_every) + " steps: expected >= 0", &loc);
  if (checkpoint_every > 0 && checkpoint_every < length) {
    return checkpointed_scan(length, reverse, carries, xs, body, checkpoint_every, loc);
  }
  std::vector<TensorType> params{TensorType{DType::i32, {}}};
  for (const TensorType& t : types_of(carries, "scan", loc)) params.push_back(t);
  for (const TensorType& t : types_of(xs, "scan", loc)) {
    TensorType slice = t;
    slice.shape.erase(slice.shape.begin());
    params.push_back(slice);
  }
  TracedRegion r = trace_region(params, body, "scan", loc);
  std::vector<Tensor> operands = carries;
  operands.insert(operands.end(), xs.begin(), xs.end());
  for (const Tensor& c : unify_captures({&r}, "scan", loc)) operands.push_back(c);
  ir::Attrs a;
  a.length = length;
  a.carries = static_cast<int64_t>(carries.size());
  a.xs = static_cast<int64_t>(xs.size());
  a.reverse = reverse;
  std::vector<ir::Region> regions;
  regions.push_back(std::move(r.region));
  return emit(ir::Op::Scan, operands, std::move(a), {}, std::move(regions), loc);
}

std::vector<Tensor> emit_while(const std::vector<Tensor>& carries, const RegionFn& cond, const RegionFn& body,
                               int64_t max_iters, const std::source_location& loc) {
  if (max_iters < -1) fail("while", "max_iters must be >= 0, or -1 for no bound", &loc);
  std::vector<TensorType> params = types_of(carries, "while", loc);
  TracedRegion c = trace_region(params, cond, "while", loc);
  TracedRegion b = trace_region(params, body, "while", loc);
  std::vector<Tensor> operands = carries;
  for (const Tensor& t : unify_captures({&c, &b}, "while", loc)) operands.push_back(t);
  ir::Attrs a;
  a.carries = static_cast<int64_t>(carries.size());
  a.max_iters = max_iters;
  std::vector<ir::Region> regions;
  regions.push_back(std::move(c.region));
  regions.push_back(std::move(b.region));
  return emit(ir::Op::While, operands, std::move(a), {}, std::move(regions), loc);
}

std::vector<Tensor> emit_cond(const Tensor& pred, const RegionFn& then_fn, const RegionFn& else_fn,
                              const std::source_location& loc) {
  if (!pred.valid() || pred.type() != TensorType{DType::boolean, {}}) {
    fail("cond", "the predicate " + pred.type().str() + " must be a bool scalar Tensor", &loc);
  }
  TracedRegion t = trace_region({}, then_fn, "cond", loc);
  TracedRegion e = trace_region({}, else_fn, "cond", loc);
  std::vector<Tensor> operands{pred};
  for (const Tensor& c : unify_captures({&t, &e}, "cond", loc)) operands.push_back(c);
  std::vector<ir::Region> regions;
  regions.push_back(std::move(t.region));
  regions.push_back(std::move(e.region));
  return emit(ir::Op::Cond, operands, {}, {}, std::move(regions), loc);
}

namespace {

// custom_vjp and custom_jvp: a primal region on the arguments and a rule region on the
// arguments followed by `extra` (the results and their adjoints, or the tangents).
std::vector<Tensor> emit_custom_rule(ir::Op op, const std::vector<Tensor>& args, const RegionFn& f,
                                     const RegionFn& rule, const std::vector<TensorType>& extra,
                                     const std::source_location& loc) {
  const char* name = ir::op_name(op);
  std::vector<TensorType> params = types_of(args, name, loc);
  TracedRegion primal = trace_region(params, f, name, loc);
  std::vector<TensorType> rule_params = params;
  rule_params.insert(rule_params.end(), extra.begin(), extra.end());
  if (op == ir::Op::CustomVjp) {  // the results and their adjoints, known only once f is traced
    for (int twice = 0; twice < 2; ++twice) {
      for (const TensorType& t : primal.region.result_types()) rule_params.push_back(t);
    }
  }
  TracedRegion traced_rule = trace_region(rule_params, rule, name, loc);
  std::vector<Tensor> operands = args;
  for (const Tensor& c : unify_captures({&primal, &traced_rule}, name, loc)) operands.push_back(c);
  ir::Attrs a;
  a.carries = static_cast<int64_t>(args.size());
  std::vector<ir::Region> regions;
  regions.push_back(std::move(primal.region));
  regions.push_back(std::move(traced_rule.region));
  return emit(op, operands, std::move(a), {}, std::move(regions), loc);
}

}  // namespace

std::vector<Tensor> emit_custom_vjp(const std::vector<Tensor>& args, const RegionFn& f, const RegionFn& bwd,
                                    const std::source_location& loc) {
  return emit_custom_rule(ir::Op::CustomVjp, args, f, bwd, {}, loc);
}

std::vector<Tensor> emit_custom_jvp(const std::vector<Tensor>& args, const RegionFn& f, const RegionFn& tangent,
                                    const std::source_location& loc) {
  return emit_custom_rule(ir::Op::CustomJvp, args, f, tangent, types_of(args, "custom_jvp", loc), loc);
}

Tensor offset_index(const Tensor& i, int64_t offset, const std::source_location& loc) {
  if (offset == 0) return i;
  return add(i, scalar(static_cast<double>(offset), DType::i32, loc), loc);
}

}  // namespace fluxion::detail
