// vmap on traced functions: trace f on one example, batch the region (transforms/batching), and inline
// the batched region into the enclosing trace with the batch axes moved where the caller asked.
// The Jacobians are vmaps of a pullback or of a tangent map over the rows of an identity.
#include "fluxion/vmap.h"

#include <numeric>
#include <string>

#include "dsl/trace.h"
#include "fluxion/error.h"
#include "fluxion/ops.h"
#include "ir/builder.h"
#include "transforms/batching/vmap.h"

namespace fluxion {

std::optional<int> BatchAxes::leaf(size_t i, size_t leaves, const char* what, const std::source_location& loc) const {
  if (uniform_) return all_;
  if (per_leaf_.size() != leaves) {
    detail::fail("vmap",
                 std::string(what) + " gives " + std::to_string(per_leaf_.size()) + " axes for " +
                     std::to_string(leaves) + " Tensor(s)",
                 &loc);
  }
  return per_leaf_[i];
}

namespace detail {
namespace {

// The permutation that moves axis `from` of a rank-`rank` array to `to`.
std::vector<int64_t> moving(int64_t from, int64_t to, int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + from);
  perm.insert(perm.begin() + to, from);
  return perm;
}

Shape concat_shapes(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The identity of n elements, as n basis arrays shaped `shape`: [n, shape...].
Tensor basis(const TensorType& t, const std::source_location& loc) {
  int64_t n = t.numel();
  return reshape(one_hot(arange(n, DType::i32, loc), n, t.dtype, loc), concat_shapes({n}, t.shape), loc);
}

}  // namespace

const BatchAxes& argument_axes(const std::vector<BatchAxes>& in_axes, size_t index, size_t count,
                               const std::source_location& loc) {
  if (in_axes.size() == 1) return in_axes[0];
  if (in_axes.size() != count) {
    fail("vmap",
         "in_axes has " + std::to_string(in_axes.size()) + " entries for a function of " + std::to_string(count) +
             " argument(s)",
         &loc);
  }
  return in_axes[index];
}

std::vector<Tensor> vmap_flat(const FlatFn& fn, const std::vector<Tensor>& args,
                              const std::vector<std::optional<int>>& in_axes, const BatchAxes& out_axes,
                              const std::source_location& loc) {
  int64_t size = -1;
  std::string first;
  std::vector<TensorType> example;
  std::vector<Tensor> operands;
  std::vector<bool> batched;
  for (size_t i = 0; i < args.size(); ++i) {
    require_valid(args[i], "vmap", loc);
    TensorType t = args[i].type();
    const std::optional<int>& wanted = in_axes[i];
    batched.push_back(wanted.has_value());
    if (!wanted.has_value()) {
      example.push_back(t);
      operands.push_back(args[i]);
      continue;
    }
    std::string leaf = "argument Tensor " + std::to_string(i) + " (" + t.str() + ")";
    if (t.rank() == 0) fail("vmap", leaf + " is a scalar: it has no axis to batch over", &loc);
    int64_t axis = norm_axis(*wanted, t.rank(), "vmap", loc);
    int64_t n = t.shape[static_cast<size_t>(axis)];
    leaf += " has " + std::to_string(n) + " examples along axis " + std::to_string(axis);
    if (size < 0) {
      size = n;
      first = leaf;
    } else if (n != size) {
      std::string what = "the batch sizes differ: " + first;
      what += ", ";
      what += leaf;
      fail("vmap", what, &loc);
    }
    t.shape.erase(t.shape.begin() + axis);
    example.push_back(t);
    operands.push_back(axis == 0 ? args[i] : permute(args[i], moving(axis, 0, t.rank() + 1), loc));
  }
  if (size < 0) fail("vmap", "no argument is batched: every in_axes entry is none", &loc);
  TracedRegion traced = trace_region(example, fn, "vmap", loc);
  for (const Tensor& c : unify_captures({&traced}, "vmap", loc)) {
    operands.push_back(c);
    batched.push_back(false);
  }
  ir::Region r;
  std::vector<batching::Batched> results;
  try {
    std::vector<batching::Batched> params;
    for (size_t i = 0; i < operands.size(); ++i) params.push_back({r.add_param(operands[i].type()), batched[i]});
    results = batching::emit_vmap(r, traced.region, params, size);
  } catch (const Error& e) {
    rethrow_at(e, "vmapping", loc);
  }
  ir::Builder b(r);
  for (size_t j = 0; j < results.size(); ++j) {
    std::optional<int> axis = out_axes.leaf(j, results.size(), "out_axes", loc);
    if (!axis) {
      if (results[j].batched) {
        fail("vmap", "out_axes is none for result " + std::to_string(j) + ", but it depends on the batched arguments",
             &loc);
      }
      r.results.push_back(results[j].id);
      continue;
    }
    ir::ValueId v = results[j].id;
    Shape s = b.shape(v);
    if (!results[j].batched) v = b.broadcast(v, concat_shapes({size}, s));
    int64_t rank = b.type(v).rank();
    int64_t to = norm_axis(axis.value(), rank, "vmap", loc);
    r.results.push_back(to == 0 ? v : b.transpose(v, moving(0, to, rank)));
  }
  return inline_traced(r, operands, "vmap", loc);
}

namespace {

Tensor jacrev_flat(const FlatFn& fn, const std::vector<Tensor>& args, size_t wrt, const std::source_location& loc) {
  std::vector<bool> mask(args.size(), false);
  mask[wrt] = true;
  auto [y, pullback] = vjp_flat(fn, args, mask, loc);
  auto row = [&](const std::vector<Tensor>& g) { return std::vector<Tensor>{pullback(g[0], loc)[0]}; };
  Tensor rows = vmap_flat(row, {basis(y.type(), loc)}, {0}, BatchAxes(0), loc)[0];
  return reshape(rows, concat_shapes(y.shape(), args[wrt].shape()), loc);
}

Tensor jacfwd_flat(const FlatFn& fn, const std::vector<Tensor>& args, size_t wrt, const std::source_location& loc) {
  require_valid(args[wrt], "jacfwd", loc);
  if (!is_float(args[wrt].dtype())) {
    fail("jacfwd", "argument " + args[wrt].type().str() + " is not a float: only float arguments have a Jacobian",
         &loc);
  }
  Shape out;
  auto column = [&](const std::vector<Tensor>& t) {
    std::vector<Tensor> tangents(args.size());
    tangents[wrt] = t[0];
    std::vector<Tensor> r = jvp_flat(fn, args, tangents, loc);
    out = r[0].shape();
    return std::vector<Tensor>{r[1]};
  };
  // The tangents' axis last: [result..., n], row-major like result shape + argument shape.
  Tensor cols = vmap_flat(column, {basis(args[wrt].type(), loc)}, {0}, BatchAxes(-1), loc)[0];
  return reshape(cols, concat_shapes(out, args[wrt].shape()), loc);
}

FlatFn gradient_of(const FlatFn& fn, size_t wrt, const std::source_location& loc) {
  return [fn, wrt, loc](const std::vector<Tensor>& params) {
    std::vector<bool> mask(params.size(), false);
    mask[wrt] = true;
    return std::vector<Tensor>{value_and_grad_flat(fn, params, mask, loc)[1]};
  };
}

}  // namespace

Tensor jacobian_flat(JacobianMode mode, const FlatFn& fn, const std::vector<Tensor>& args, size_t wrt,
                     const std::source_location& loc) {
  switch (mode) {
    case JacobianMode::Reverse: return jacrev_flat(fn, args, wrt, loc);
    case JacobianMode::Forward: return jacfwd_flat(fn, args, wrt, loc);
    case JacobianMode::Hessian: return jacfwd_flat(gradient_of(fn, wrt, loc), args, wrt, loc);
  }
  fail("jacobian", "unknown mode", &loc);
}

}  // namespace detail
}  // namespace fluxion
