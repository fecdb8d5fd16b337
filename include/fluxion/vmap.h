// Automatic batching: vmap(f) runs f, written for one example, on a batch of them at once, as one
// program whose ops carry the batch as an ordinary dimension. It composes with grad, vjp, jvp,
// jit, the loops and cond, and with itself. jacrev, jacfwd and hessian are built on it.
// docs/vmap.md states the semantics.
#pragma once

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/autodiff.h"
#include "fluxion/tensor.h"
#include "fluxion/tree.h"

namespace fluxion {

// The batch axes of one argument of a vmapped function, or of its results: one axis for every
// leaf of the tree (BatchAxes(0), BatchAxes(-1)), none (BatchAxes(none): an argument shared by every example;
// a result that must not depend on the batch), or one entry per leaf ({0, none, 1}). Negative
// axes count from the end, of the batched argument or of the batched result.
class BatchAxes {
 public:
  BatchAxes(int axis) : all_(axis), uniform_(true) {}  // NOLINT(google-explicit-constructor)
  BatchAxes(std::nullopt_t) : uniform_(true) {}        // NOLINT(google-explicit-constructor)
  BatchAxes(std::initializer_list<std::optional<int>> per_leaf) : per_leaf_(per_leaf) {}
  explicit BatchAxes(std::vector<std::optional<int>> per_leaf) : per_leaf_(std::move(per_leaf)) {}
  // The axis of leaf `i` of `leaves`; Error when per-leaf axes do not number `leaves`.
  std::optional<int> leaf(size_t i, size_t leaves, const char* what, const std::source_location& loc) const;

 private:
  std::optional<int> all_;
  std::vector<std::optional<int>> per_leaf_;
  bool uniform_ = false;
};

// An argument or result without a batch axis: vmap(f, {0, none}).
inline constexpr std::nullopt_t none = std::nullopt;

namespace detail {
// The axes of argument `index` of `count`: in_axes[index], or in_axes[0] for every argument when
// it has one entry. Error when in_axes has another size.
const BatchAxes& argument_axes(const std::vector<BatchAxes>& in_axes, size_t index, size_t count,
                               const std::source_location& loc);
// Traces fn on one example of `args` (leaf i without its batch axis in_axes[i]; the whole leaf
// when nullopt), batches it over the examples, and records it in the current trace. Returns
// fn's results with the batch at out_axes.
std::vector<Tensor> vmap_flat(const FlatFn& fn, const std::vector<Tensor>& args,
                              const std::vector<std::optional<int>>& in_axes, const BatchAxes& out_axes,
                              const std::source_location& loc);
// How a dense Jacobian is computed: reverse mode (a vmapped pullback over the rows of an
// identity), forward mode (vmapped tangents), or the Hessian (forward mode of the gradient).
enum class JacobianMode { Reverse, Forward, Hessian };
// The Jacobian of fn's one result with respect to its argument leaf `wrt`, shaped result shape
// + argument shape (for the Hessian, the argument's shape twice).
Tensor jacobian_flat(JacobianMode mode, const FlatFn& fn, const std::vector<Tensor>& args, size_t wrt,
                     const std::source_location& loc);

// Leaf index of the one leaf of argument `wrt`; Error unless that argument is one Tensor.
template <class... Args>
size_t single_leaf(int wrt, const std::source_location& loc, const Args&... args) {
  std::vector<size_t> counts = {tree::count<Tensor>(args)...};
  check_wrt({wrt}, counts.size(), loc);
  size_t at = 0;
  for (int i = 0; i < wrt; ++i) at += counts[static_cast<size_t>(i)];
  if (counts[static_cast<size_t>(wrt)] != 1) {
    fail("jacobian",
         "argument " + std::to_string(wrt) + " must be one Tensor, not a tree of " +
             std::to_string(counts[static_cast<size_t>(wrt)]),
         &loc);
  }
  return at;
}

template <class F>
auto jacobian(F f, int wrt, JacobianMode mode, const std::source_location& loc) {
  return [f = std::move(f), wrt, mode, loc](const auto&... args) {
    std::vector<Tensor> flat;
    (tree::flatten<Tensor>(args, flat), ...);
    std::unique_ptr<Tensor> traced;
    return jacobian_flat(mode, flat_call(f, traced, args...), flat, single_leaf(wrt, loc, args...), loc);
  };
}
}  // namespace detail

// f for a batch of examples. f takes Tensors (or trees of Tensors) and returns a Tensor or a
// tree of them. in_axes gives each argument's batch axes (one entry: the same for every
// argument); out_axes where the results get theirs. Called, like grad's functions, inside a
// trace (jit). Errors, at the caller's line: batch sizes that differ, an axis out of range, no
// batched argument, a result whose out axis is none but that depends on the batch.
template <class F>
class Vmapped {
 public:
  Vmapped(F f, std::vector<BatchAxes> in_axes, BatchAxes out_axes, std::source_location loc)
      : f_(std::move(f)), in_axes_(std::move(in_axes)), out_axes_(std::move(out_axes)), loc_(loc) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using Result = std::decay_t<std::invoke_result_t<const F&, const Args&...>>;
    std::vector<Tensor> flat;
    std::vector<std::optional<int>> axes;
    size_t index = 0;
    auto add = [&](const auto& arg) {
      size_t before = flat.size();
      tree::flatten<Tensor>(arg, flat);
      const BatchAxes& a = detail::argument_axes(in_axes_, index++, sizeof...(Args), loc_);
      for (size_t i = before; i < flat.size(); ++i)
        axes.push_back(a.leaf(i - before, flat.size() - before, "in_axes", loc_));
    };
    (add(args), ...);
    std::unique_ptr<Result> traced;
    std::vector<Tensor> r = detail::vmap_flat(detail::flat_call(f_, traced, args...), flat, axes, out_axes_, loc_);
    const Tensor* p = r.data();
    return tree::rebuild<Tensor, Tensor>(*traced, p);
  }

 private:
  F f_;
  std::vector<BatchAxes> in_axes_;
  BatchAxes out_axes_;
  std::source_location loc_;
};

template <class F>
Vmapped<F> vmap(F f, std::vector<BatchAxes> in_axes = {0}, BatchAxes out_axes = 0,
                std::source_location loc = std::source_location::current()) {
  return Vmapped<F>(std::move(f), std::move(in_axes), std::move(out_axes), loc);
}

// Dense Jacobians of f (which returns one float Tensor) with respect to argument `wrt` (one
// Tensor): shaped f's result shape followed by the argument's shape, as JAX's. jacrev runs one
// pullback per result element and suits functions with fewer outputs than inputs; jacfwd one
// tangent per input element, and suits the others.
template <class F>
auto jacrev(F f, int wrt = 0, std::source_location loc = std::source_location::current()) {
  return detail::jacobian(std::move(f), wrt, detail::JacobianMode::Reverse, loc);
}

template <class F>
auto jacfwd(F f, int wrt = 0, std::source_location loc = std::source_location::current()) {
  return detail::jacobian(std::move(f), wrt, detail::JacobianMode::Forward, loc);
}

// The Hessian of f (a float scalar) with respect to argument `wrt`: jacfwd of the gradient,
// shaped the argument's shape twice.
template <class F>
auto hessian(F f, int wrt = 0, std::source_location loc = std::source_location::current()) {
  return detail::jacobian(std::move(f), wrt, detail::JacobianMode::Hessian, loc);
}

}  // namespace fluxion
