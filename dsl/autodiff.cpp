// value_and_grad on traced functions: trace f as a region, differentiate the region, and inline
// the result into the enclosing trace.
#include "fluxion/autodiff.h"

#include <string>

#include "dsl/trace.h"
#include "fluxion/error.h"
#include "ir/builder.h"
#include "transforms/autodiff/autodiff.h"

namespace fluxion::detail {

void check_wrt(const std::vector<int>& wrt, size_t n, const std::source_location& loc) {
  for (int w : wrt) {
    if (w < 0 || static_cast<size_t>(w) >= n) {
      fail(
          "grad",
          "wrt index " + std::to_string(w) + " is out of range for a function of " + std::to_string(n) + " argument(s)",
          &loc);
    }
  }
}

namespace {

// Traces fn as a closed region of the current trace; returns it with the Tensors to bind its
// parameters to (args, then the values it captured from the enclosing function).
std::pair<ir::Region, std::vector<Tensor>> trace_closed(
    const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn, const std::vector<Tensor>& args,
    const char* op, const std::source_location& loc) {
  TracedRegion r = trace_region(types_of(args, op, loc), fn, op, loc);
  std::vector<Tensor> operands = args;
  for (const Tensor& c : unify_captures({&r}, op, loc)) operands.push_back(c);
  return {std::move(r.region), std::move(operands)};
}

}  // namespace

std::vector<Tensor> jvp_flat(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                             const std::vector<Tensor>& args, const std::vector<Tensor>& tangents,
                             const std::source_location& loc) {
  auto [region, operands] = trace_closed(fn, args, "jvp", loc);
  for (size_t i = 0; i < tangents.size(); ++i) {
    if (tangents[i].valid() && tangents[i].type() != args[i].type()) {
      fail("jvp", "the tangent " + tangents[i].type().str() + " does not match its argument " + args[i].type().str(),
           &loc);
    }
  }
  if (region.results.size() != 1 || !is_float(region.type(region.results[0]).dtype)) {
    fail("jvp", "the function must return one float Tensor", &loc);
  }
  // A region whose params are the operands, then the tangents given; it returns f and J t.
  ir::Region r;
  std::vector<ir::ValueId> params, tangent_ids(region.params.size(), -1);
  std::vector<Tensor> bind = operands;
  for (ir::ValueId p : region.params) params.push_back(r.add_param(region.type(p)));
  for (size_t i = 0; i < tangents.size(); ++i) {
    if (!tangents[i].valid()) continue;
    tangent_ids[i] = r.add_param(tangents[i].type());
    bind.push_back(tangents[i]);
  }
  try {
    std::vector<ir::ValueId> outs;
    std::vector<ir::ValueId> touts = autodiff::emit_jvp(r, region, params, tangent_ids, &outs);
    ir::Builder b(r);
    r.results = {outs[0], touts[0] >= 0 ? touts[0] : b.splat_like(0, outs[0])};
  } catch (const Error& e) {
    rethrow_at(e, "differentiating", loc);
  }
  return inline_traced(r, bind, "grad", loc);
}

struct PullbackState {
  ir::Region region;             // f, closed
  std::vector<Tensor> operands;  // what its parameters are bound to
  std::vector<bool> wrt;         // per parameter
};

std::pair<Tensor, Pullback> vjp_flat(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                     const std::vector<Tensor>& args, const std::vector<bool>& wrt,
                                     const std::source_location& loc) {
  auto state = std::make_shared<PullbackState>();
  std::tie(state->region, state->operands) = trace_closed(fn, args, "vjp", loc);
  if (state->region.results.size() != 1 || !is_float(state->region.type(state->region.results[0]).dtype)) {
    fail("vjp", "the function must return one float Tensor", &loc);
  }
  state->wrt = wrt;
  state->wrt.resize(state->region.params.size(), false);
  for (size_t i = 0; i < wrt.size(); ++i) {
    if (wrt[i] && !is_float(args[i].dtype())) {
      fail("vjp", "argument " + args[i].type().str() + " is not a float: only float arguments can be differentiated",
           &loc);
    }
  }
  Tensor y = inline_traced(state->region, state->operands, "vjp", loc)[0];
  Pullback pullback;
  pullback.state_ = std::move(state);
  return {y, std::move(pullback)};
}

void fail_has_aux(bool has_aux, const std::source_location& loc) {
  fail("value_and_grad",
       has_aux ? "has_aux is set, so f must return std::pair{loss, aux}; it returns one Tensor"
               : "f returns std::pair{loss, aux}: pass {.has_aux = true}",
       &loc);
}

std::vector<Tensor> value_and_grad_flat(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                        const std::vector<Tensor>& args, const std::vector<bool>& wrt,
                                        const std::source_location& loc, bool has_aux) {
  auto [region, operands] = trace_closed(fn, args, "grad", loc);
  std::vector<bool> mask = wrt;
  mask.resize(region.params.size(), false);
  try {
    return inline_traced(autodiff::value_and_grad(region, mask, has_aux), operands, "grad", loc);
  } catch (const Error& e) {
    rethrow_at(e, "differentiating", loc);
  }
}

}  // namespace fluxion::detail

namespace fluxion {

std::vector<Tensor> Pullback::operator()(const Tensor& g, std::source_location loc) const {
  const detail::PullbackState& s = *state_;
  const TensorType& out = s.region.type(s.region.results[0]);
  if (!g.valid() || g.type() != out) {
    detail::fail("vjp", "the adjoint " + g.type().str() + " must have the type of the result, " + out.str(), &loc);
  }
  // A region of (f's parameters, g) returning the adjoints of the differentiated parameters.
  ir::Region r;
  std::vector<ir::ValueId> params;
  for (ir::ValueId p : s.region.params) params.push_back(r.add_param(s.region.type(p)));
  ir::ValueId gid = r.add_param(out);
  try {
    std::vector<ir::ValueId> grads = autodiff::emit_vjp(r, s.region, params, {gid}, s.wrt, nullptr);
    ir::Builder b(r);
    for (size_t i = 0; i < params.size(); ++i) {
      if (s.wrt[i]) r.results.push_back(grads[i] >= 0 ? grads[i] : b.splat_like(0, params[i]));
    }
  } catch (const Error& e) {
    detail::rethrow_at(e, "differentiating", loc);
  }
  std::vector<Tensor> bind = s.operands;
  bind.push_back(g);
  return detail::inline_traced(r, bind, "grad", loc);
}

}  // namespace fluxion
