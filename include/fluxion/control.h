// Structured control flow. Each call records one loop or conditional in the IR (the body is
// traced once, not unrolled), so a compiled program runs every iteration without returning to
// the host. Carries are trees of Tensors (a Tensor, or vectors/arrays/pairs/tuples of them,
// see tree.h). A body may use Tensors of the enclosing function directly (they are captured).
#pragma once

#include <functional>
#include <optional>
#include <source_location>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/tensor.h"
#include "fluxion/tree.h"

namespace fluxion {

namespace detail {
using RegionFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// body gets [i, carries..., x slices...] and returns [carries..., y slices...]. With
// checkpoint_every = k in (0, length), records nested scans (blocks of k steps) so that reverse
// mode saves one carry per block and recomputes the steps inside it.
std::vector<Tensor> emit_scan(int64_t length, bool reverse, const std::vector<Tensor>& carries,
                              const std::vector<Tensor>& xs, const RegionFn& body, int64_t checkpoint_every,
                              const std::source_location& loc);
// cond and body get the carries; cond returns one bool[], body the new carries.
std::vector<Tensor> emit_while(const std::vector<Tensor>& carries, const RegionFn& cond,
                               const RegionFn& body, int64_t max_iters, const std::source_location& loc);
// f(args) -> results and bwd(args..., results..., adjoints of results...) -> one adjoint per arg.
std::vector<Tensor> emit_custom_vjp(const std::vector<Tensor>& args, const RegionFn& f, const RegionFn& bwd,
                                    const std::source_location& loc);
// f(args) -> results and tangent(args..., tangents of args...) -> one tangent per result.
std::vector<Tensor> emit_custom_jvp(const std::vector<Tensor>& args, const RegionFn& f, const RegionFn& tangent,
                                    const std::source_location& loc);
// Both branches take no arguments (they capture what they use) and return equal types.
std::vector<Tensor> emit_cond(const Tensor& pred, const RegionFn& then_fn, const RegionFn& else_fn,
                              const std::source_location& loc);
// The per-step index i + offset, as i32.
Tensor offset_index(const Tensor& i, int64_t offset, const std::source_location& loc);

template <class T>
std::vector<Tensor> leaves(const T& t) {
  std::vector<Tensor> out;
  tree::flatten<Tensor>(t, out);
  return out;
}
template <class T>
T rebuild_like(const T& like, const std::vector<Tensor>& flat, size_t offset = 0) {
  const Tensor* it = flat.data() + offset;
  return tree::rebuild<Tensor, Tensor>(like, it);
}
}  // namespace detail

// Reverse-mode memory policy of a loop: 0 saves the carry entering every step; k > 0 saves
// every k-th and recomputes the k steps after it when the gradient needs them (memory
// length/k + k carries instead of length, for about one more forward pass).
struct Checkpoint {
  int64_t every = 0;
};

// for i in [lo, hi): carry = body(i, carry). `i` is an i32 scalar Tensor. Returns the final
// carry (init when hi <= lo). Error when the body changes a carry's shape or dtype.
template <class C, class Body>
C fori_loop(int64_t lo, int64_t hi, Body body, const C& init, Checkpoint checkpoint = {},
            std::source_location loc = std::source_location::current()) {
  std::vector<Tensor> outs = detail::emit_scan(
      hi > lo ? hi - lo : 0, false, detail::leaves(init), {},
      [&](const std::vector<Tensor>& p) {
        C carry = detail::rebuild_like(init, p, 1);
        return detail::leaves(C(body(detail::offset_index(p[0], lo, loc), carry)));
      },
      checkpoint.every, loc);
  return detail::rebuild_like(init, outs);
}

struct ScanOptions {
  int64_t length = -1;       // trip count; -1: the leading dimension of the xs
  bool reverse = false;      // iterate from the last step to the first (ys keep step order)
  Checkpoint checkpoint{};   // reverse-mode memory policy
};

// carry, y = body(carry, x) for each x along the leading dimension of `xs`; returns the final
// carry and the ys stacked along a new leading dimension. `xs` is a tree of Tensors (use
// std::tuple<>{} with ScanOptions::length for none). body returns std::pair<C, Y>.
template <class C, class X, class Body>
auto scan(Body body, const C& init, const X& xs, ScanOptions opt = {},
          std::source_location loc = std::source_location::current()) {
  using R = std::invoke_result_t<Body&, const C&, const X&>;
  using Y = typename R::second_type;
  std::vector<Tensor> flat_xs = detail::leaves(xs);
  int64_t length = opt.length;
  if (length < 0 && !flat_xs.empty() && flat_xs[0].rank() > 0) length = flat_xs[0].shape()[0];
  std::optional<Y> y_like;
  size_t n_carry = tree::count<Tensor>(init);
  std::vector<Tensor> outs = detail::emit_scan(
      length, opt.reverse, detail::leaves(init), flat_xs,
      [&](const std::vector<Tensor>& p) {
        C carry = detail::rebuild_like(init, p, 1);
        X x = detail::rebuild_like(xs, p, 1 + n_carry);
        R r = body(carry, x);
        y_like.emplace(r.second);
        std::vector<Tensor> out = detail::leaves(r.first);
        tree::flatten<Tensor>(r.second, out);
        return out;
      },
      opt.checkpoint.every, loc);
  return std::pair<C, Y>(detail::rebuild_like(init, outs), detail::rebuild_like(*y_like, outs, n_carry));
}

// while cond(carry): carry = body(carry). cond returns a bool scalar Tensor; the test runs on
// the device. With max_iters >= 0, running more iterations raises Error when the program runs.
template <class C, class Cond, class Body>
C while_loop(Cond cond, Body body, const C& init, int64_t max_iters = -1,
             std::source_location loc = std::source_location::current()) {
  std::vector<Tensor> outs = detail::emit_while(
      detail::leaves(init),
      [&](const std::vector<Tensor>& p) { return std::vector<Tensor>{cond(detail::rebuild_like(init, p))}; },
      [&](const std::vector<Tensor>& p) { return detail::leaves(C(body(detail::rebuild_like(init, p)))); },
      max_iters, loc);
  return detail::rebuild_like(init, outs);
}

// then_fn() if pred (a bool scalar Tensor) else else_fn(); both are traced, return the same
// tree type and the same Tensor types, and only the chosen one runs.
template <class Then, class Else>
auto cond(const Tensor& pred, Then then_fn, Else else_fn,
          std::source_location loc = std::source_location::current()) {
  using R = std::invoke_result_t<Then&>;
  std::optional<R> like;
  std::vector<Tensor> outs = detail::emit_cond(
      pred,
      [&](const std::vector<Tensor>&) {
        like.emplace(then_fn());
        return detail::leaves(*like);
      },
      [&](const std::vector<Tensor>&) { return detail::leaves(R(else_fn())); }, loc);
  return detail::rebuild_like(*like, outs);
}

// A function with a user-given reverse rule, for numerically delicate functions: reverse mode
// uses `bwd` instead of differentiating `f`. f takes Tensors (or trees) and returns one Tensor;
// bwd takes the same arguments, then f's result and its adjoint, and returns a
// std::vector<Tensor> with one adjoint per leaf of the arguments (typed like it). Composes with
// jit, grad and loops; forward mode differentiates f itself.
template <class F, class Bwd>
class CustomVjp {
 public:
  CustomVjp(F f, Bwd bwd, std::source_location loc) : f_(std::move(f)), bwd_(std::move(bwd)), loc_(loc) {}

  template <class... Args>
  Tensor operator()(const Args&... args) const {
    std::vector<Tensor> flat;
    (tree::flatten<Tensor>(args, flat), ...);
    auto rebuilt = [&](const std::vector<Tensor>& p) {
      const Tensor* it = p.data();
      return std::tuple<Args...>{tree::rebuild<Tensor, Tensor>(args, it)...};
    };
    auto primal = [&](const std::vector<Tensor>& p) { return std::vector<Tensor>{std::apply(f_, rebuilt(p))}; };
    auto backward = [&](const std::vector<Tensor>& p) {
      Tensor out = p[flat.size()], g = p[flat.size() + 1];
      return std::apply([&](const auto&... a) { return std::vector<Tensor>(bwd_(a..., out, g)); }, rebuilt(p));
    };
    return detail::emit_custom_vjp(flat, primal, backward, loc_)[0];
  }

 private:
  F f_;
  Bwd bwd_;
  std::source_location loc_;
};

// A function with a user-given tangent rule: forward mode uses `tangent` instead of
// differentiating `f`, and reverse mode uses its transpose. tangent(args..., tangents...)
// takes the arguments and then one tangent per argument (same trees, same types) and returns
// the tangent of f's result; it must be linear in the tangents. Composes with jit and loops.
template <class F, class Tan>
class CustomJvp {
 public:
  CustomJvp(F f, Tan tangent, std::source_location loc) : f_(std::move(f)), tangent_(std::move(tangent)), loc_(loc) {}

  template <class... Args>
  Tensor operator()(const Args&... args) const {
    std::vector<Tensor> flat;
    (tree::flatten<Tensor>(args, flat), ...);
    auto rebuilt = [&](const std::vector<Tensor>& p, size_t offset) {
      const Tensor* it = p.data() + offset;
      return std::tuple<Args...>{tree::rebuild<Tensor, Tensor>(args, it)...};
    };
    auto primal = [&](const std::vector<Tensor>& p) { return std::vector<Tensor>{std::apply(f_, rebuilt(p, 0))}; };
    auto rule = [&](const std::vector<Tensor>& p) {
      return std::vector<Tensor>{std::apply(tangent_, std::tuple_cat(rebuilt(p, 0), rebuilt(p, flat.size())))};
    };
    return detail::emit_custom_jvp(flat, primal, rule, loc_)[0];
  }

 private:
  F f_;
  Tan tangent_;
  std::source_location loc_;
};

template <class F, class Tan>
CustomJvp<F, Tan> custom_jvp(F f, Tan tangent, std::source_location loc = std::source_location::current()) {
  return CustomJvp<F, Tan>(std::move(f), std::move(tangent), loc);
}

template <class F, class Bwd>
CustomVjp<F, Bwd> custom_vjp(F f, Bwd bwd, std::source_location loc = std::source_location::current()) {
  return CustomVjp<F, Bwd>(std::move(f), std::move(bwd), loc);
}

}  // namespace fluxion
