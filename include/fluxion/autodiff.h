// Differentiation of traced functions: value_and_grad and grad. They return function objects
// that take and return Tensors, so they compose with jit (and with each other: grad of grad).
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/error.h"
#include "fluxion/tensor.h"
#include "fluxion/tree.h"

namespace fluxion {

namespace detail {
// Traces `fn` on parameters like `args` (a region of the current trace), differentiates it in
// reverse mode with respect to the arguments marked in `wrt`, and records the result in the
// current trace. Returns [value, gradients of the marked arguments in order]; with has_aux, fn's
// results after the first follow, undifferentiated.
std::vector<Tensor> value_and_grad_flat(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                        const std::vector<Tensor>& args, const std::vector<bool>& wrt,
                                        const std::source_location& loc, bool has_aux = false);
// Traces `fn` on parameters like `args`, then records f's results and their tangents along
// `tangents` (one per arg; an empty Tensor for a zero tangent). Returns [results..., tangents
// of the results].
struct PullbackState;
}  // namespace detail

class Pullback;
namespace detail {
// Traces fn like value_and_grad_flat, records its result, and returns it with its pullback.
std::pair<Tensor, Pullback> vjp_flat(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                     const std::vector<Tensor>& args, const std::vector<bool>& wrt,
                                     const std::source_location& loc);
}  // namespace detail

// The reverse-mode map of a vjp: from an adjoint of f's result (typed like it) to the adjoints
// of the differentiated arguments (one per leaf, in argument order). It may be called several
// times; each call records the adjoint computation in the current trace (the forward values are
// shared with the vjp's, once simplify has merged the repeated forward ops).
class Pullback {
 public:
  std::vector<Tensor> operator()(const Tensor& g, std::source_location loc = std::source_location::current()) const;

 private:
  friend std::pair<Tensor, Pullback> detail::vjp_flat(
      const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>&, const std::vector<Tensor>&,
      const std::vector<bool>&, const std::source_location&);
  std::shared_ptr<const detail::PullbackState> state_;
};

namespace detail {
std::vector<Tensor> jvp_flat(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                             const std::vector<Tensor>& args, const std::vector<Tensor>& tangents,
                             const std::source_location& loc);
}  // namespace detail

namespace detail {
// Error unless every index of wrt is in [0, n).
void check_wrt(const std::vector<int>& wrt, size_t n, const std::source_location& loc);

// Flattens the arguments into leaves and marks the leaves of the arguments listed in wrt.
template <class... Args>
void flatten_marked(const std::vector<int>& wrt, std::vector<Tensor>& flat, std::vector<bool>& mask,
                    const std::source_location& loc, const Args&... args) {
  int index = 0;
  auto add_arg = [&](const auto& arg) {
    size_t before = flat.size();
    tree::flatten<Tensor>(arg, flat);
    bool marked = false;
    for (int w : wrt) marked = marked || w == index;
    mask.insert(mask.end(), flat.size() - before, marked);
    ++index;
  };
  (add_arg(args), ...);
  check_wrt(wrt, sizeof...(Args), loc);
}
using FlatFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// f as a function of the flattened leaves of arguments shaped like `args`: it rebuilds the
// arguments' trees, calls f, and flattens its result; `traced` receives that result (the tree
// shape of the outputs). The function refers to f, traced and args: call it while they live.
template <class F, class Result, class... Args>
FlatFn flat_call(const F& f, std::unique_ptr<Result>& traced, const Args&... args) {
  return [&f, &traced, &args...](const std::vector<Tensor>& params) {
    const Tensor* p = params.data();
    // Braces, not make_tuple: the leaves must be taken in argument order.
    std::tuple<Args...> rebuilt{tree::rebuild<Tensor, Tensor>(args, p)...};
    traced = std::make_unique<Result>(std::apply(f, rebuilt));
    std::vector<Tensor> out;
    tree::flatten<Tensor>(*traced, out);
    return out;
  };
}

}  // namespace detail

struct GradOptions {
  // f returns (loss, aux): a std::pair of the float scalar and a tree of Tensors (tree.h) that
  // comes back undifferentiated beside the gradients, as JAX's has_aux.
  bool has_aux = false;
};

namespace detail {
template <class R>
struct AuxResult : std::false_type {};
template <class Aux>
struct AuxResult<std::pair<Tensor, Aux>> : std::true_type {};
[[noreturn]] void fail_has_aux(bool has_aux, const std::source_location& loc);

// grad, value_and_grad and vjp make functions of Tensors, called while tracing; called with
// Arrays they say so in a sentence instead of a page of template errors.
template <class... Args>
inline constexpr bool traced_args = (tree::is_tree<Args, Tensor> && ...);
template <class... Args>
void diagnose_traced_args() {
  static_assert(traced_args<Args...>,
                "fluxion::grad, value_and_grad and vjp return functions of Tensors, which run while a function is "
                "traced: jit the result, fluxion::jit(fluxion::grad(f))(arrays...), or call it inside a jitted "
                "function");
}
}  // namespace detail

// f's value and its gradient with respect to the arguments whose indices are in `wrt`.
// f takes Tensors (or trees of Tensors) and returns one float scalar Tensor. Calling the
// result with the same arguments returns {value, grads}, where grads holds one Tensor per leaf
// of each differentiated argument, in argument order. With {.has_aux = true}, f returns
// std::pair{loss, aux} and the call returns std::tuple{loss, aux, grads}. Errors: a non-scalar
// or non-float result, an integer argument in wrt, an index out of range, an op whose rule is
// not built, has_aux that does not match what f returns.
template <class F>
class ValueAndGrad {
 public:
  ValueAndGrad(F f, std::vector<int> wrt, GradOptions options, std::source_location loc)
      : f_(std::move(f)), wrt_(std::move(wrt)), options_(options), loc_(loc) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    if constexpr (!detail::traced_args<Args...>) {
      detail::diagnose_traced_args<Args...>();
    } else {
      return call(args...);
    }
  }

 private:
  template <class... Args>
  auto call(const Args&... args) const {
    using Result = std::decay_t<std::invoke_result_t<const F&, const Args&...>>;
    constexpr bool aux = detail::AuxResult<Result>::value;
    if (aux != options_.has_aux) detail::fail_has_aux(options_.has_aux, loc_);
    std::vector<Tensor> flat;
    std::vector<bool> mask;
    detail::flatten_marked(wrt_, flat, mask, loc_, args...);
    std::unique_ptr<Result> traced;  // f's result in the trace: the aux tree's shape
    std::vector<Tensor> r = detail::value_and_grad_flat(detail::flat_call(f_, traced, args...), flat, mask, loc_, aux);
    size_t n_grads = static_cast<size_t>(std::count(mask.begin(), mask.end(), true));
    std::vector<Tensor> grads(r.begin() + 1, r.begin() + 1 + static_cast<std::ptrdiff_t>(n_grads));
    if constexpr (aux) {
      const Tensor* a = r.data() + 1 + n_grads;
      return std::make_tuple(r[0], tree::rebuild<Tensor, Tensor>(traced->second, a), std::move(grads));
    } else {
      return std::make_pair(r[0], std::move(grads));
    }
  }

  F f_;
  std::vector<int> wrt_;
  GradOptions options_;
  std::source_location loc_;
};

template <class F>
ValueAndGrad<F> value_and_grad(F f, std::vector<int> wrt = {0}, GradOptions options = {},
                               std::source_location loc = std::source_location::current()) {
  return ValueAndGrad<F>(std::move(f), std::move(wrt), options, loc);
}

// Only the gradients of value_and_grad: a std::vector<Tensor> (with has_aux, std::pair{grads,
// aux}). grad<I...>(f) below returns them shaped like the arguments instead.
template <class F>
auto grad(F f, std::vector<int> wrt = {0}, GradOptions options = {},
          std::source_location loc = std::source_location::current()) {
  return [vg = ValueAndGrad<F>(std::move(f), std::move(wrt), options, loc)](const auto&... args) {
    if constexpr (!detail::traced_args<std::decay_t<decltype(args)>...>) {
      detail::diagnose_traced_args<std::decay_t<decltype(args)>...>();
    } else {
      auto r = vg(args...);
      if constexpr (std::tuple_size_v<decltype(r)> == 3) {
        return std::make_pair(std::move(std::get<2>(r)), std::move(std::get<1>(r)));
      } else {
        return std::move(r.second);
      }
    }
  };
}

namespace detail {
template <int... I>
inline constexpr bool strictly_increasing = [] {
  int indices[] = {I...};
  for (size_t k = 1; k < sizeof...(I); ++k) {
    if (indices[k] <= indices[k - 1]) return false;
  }
  return true;
}();
template <size_t Arity, int First, int... Rest>
inline constexpr bool argnums_in_range = First >= 0 &&
                                         ((Rest < static_cast<int>(Arity)) && ... && (First < static_cast<int>(Arity)));
template <size_t Arity, int First, int... Rest>
inline constexpr bool valid_argnums = argnums_in_range<Arity, First, Rest...>&& strictly_increasing<First, Rest...>;
template <size_t Arity, int First, int... Rest>
void diagnose_argnums() {
  static_assert(argnums_in_range<Arity, First, Rest...>,
                "fluxion::grad<I...> / value_and_grad<I...>: an argument index is not that of an argument the "
                "function is called with");
  static_assert(strictly_increasing<First, Rest...>,
                "fluxion::grad<I...> / value_and_grad<I...>: list the argument indices in increasing order, each once");
}
// The flat gradients (one per leaf of the arguments First, Rest..., in order) as those arguments'
// trees: one tree for one index, a std::tuple of them for several.
template <int First, int... Rest, class... Args>
auto shaped_like_arguments(const std::vector<Tensor>& grads, const Args&... args) {
  auto all = std::forward_as_tuple(args...);
  const Tensor* leaf = grads.data();
  if constexpr (sizeof...(Rest) == 0) {
    return tree::rebuild<Tensor, Tensor>(std::get<First>(all), leaf);
  } else {
    // Braces, not make_tuple: the leaves must be taken in argument order.
    return std::tuple<std::decay_t<std::tuple_element_t<First, std::tuple<Args...>>>,
                      std::decay_t<std::tuple_element_t<Rest, std::tuple<Args...>>>...>{
        tree::rebuild<Tensor, Tensor>(std::get<First>(all), leaf),
        tree::rebuild<Tensor, Tensor>(std::get<Rest>(all), leaf)...};
  }
}
}  // namespace detail

namespace detail {
// body(args...) when the arguments are trees of Tensors and First, Rest... index them; otherwise
// the sentence that says what is wrong, and a result jit can take, so that it is the only error.
template <int First, int... Rest, class Body, class... Args>
auto call_with_argnums(const Body& body, const Args&... args) {
  if constexpr (!traced_args<Args...>) {
    diagnose_traced_args<Args...>();
    return Tensor();
  } else if constexpr (!valid_argnums<sizeof...(Args), First, Rest...>) {
    diagnose_argnums<sizeof...(Args), First, Rest...>();
    return Tensor();
  } else {
    return body(args...);
  }
}
}  // namespace detail

// value_and_grad with the gradients shaped like the arguments, as JAX's argnums:
// value_and_grad<0>(f)(params, x) returns {value, a tree like params}; value_and_grad<0, 2>(f)
// returns {value, std::tuple of the trees of arguments 0 and 2}. With {.has_aux = true}:
// std::tuple{value, aux, gradients}. The indices are given in increasing order.
template <int First, int... Rest, class F>
auto value_and_grad(F f, GradOptions options = {}, std::source_location loc = std::source_location::current()) {
  return [vg = ValueAndGrad<F>(std::move(f), {First, Rest...}, options, loc)](const auto&... args) {
    auto shaped = [&vg](const auto&... a) {
      auto r = vg(a...);
      if constexpr (std::tuple_size_v<decltype(r)> == 3) {
        return std::make_tuple(std::move(std::get<0>(r)), std::move(std::get<1>(r)),
                               detail::shaped_like_arguments<First, Rest...>(std::get<2>(r), a...));
      } else {
        return std::make_pair(std::move(r.first), detail::shaped_like_arguments<First, Rest...>(r.second, a...));
      }
    };
    return detail::call_with_argnums<First, Rest...>(shaped, args...);
  };
}

// Only the gradients of value_and_grad<I...>: a tree like argument I (a std::tuple of trees for
// several indices; with has_aux, std::pair{gradients, aux}).
template <int First, int... Rest, class F>
auto grad(F f, GradOptions options = {}, std::source_location loc = std::source_location::current()) {
  return [vg = value_and_grad<First, Rest...>(std::move(f), options, loc)](const auto&... args) {
    auto gradients = [&vg](const auto&... a) {
      auto r = vg(a...);
      if constexpr (std::tuple_size_v<decltype(r)> == 3) {
        return std::make_pair(std::move(std::get<2>(r)), std::move(std::get<1>(r)));
      } else {
        return std::move(r.second);
      }
    };
    return detail::call_with_argnums<First, Rest...>(gradients, args...);
  };
}

// Reverse mode with an explicit pullback: vjp(f, wrt)(args...) returns {f(args), pullback},
// where f returns one float Tensor (any shape) and pullback(g) gives g^T J for the arguments in
// wrt. value_and_grad is the case of a scalar f and g = 1.
template <class F>
auto vjp(F f, std::vector<int> wrt = {0}, std::source_location loc = std::source_location::current()) {
  return [f = std::move(f), wrt = std::move(wrt), loc](const auto&... args) {
    if constexpr (!detail::traced_args<std::decay_t<decltype(args)>...>) {
      detail::diagnose_traced_args<std::decay_t<decltype(args)>...>();
    } else {
      std::vector<Tensor> flat;
      std::vector<bool> mask;
      detail::flatten_marked(wrt, flat, mask, loc, args...);
      std::unique_ptr<Tensor> traced;
      return detail::vjp_flat(detail::flat_call(f, traced, args...), flat, mask, loc);
    }
  };
}

// Forward mode: f's result and its directional derivative J t, where f takes the Tensors (or
// trees) in `primals` and returns one float Tensor, and `tangents` holds one Tensor per leaf of
// each argument listed in `wrt`, with that leaf's type. Costs about one extra forward pass,
// whatever the number of inputs. Composes with grad: jvp of grad(f) is a Hessian-vector product.
template <class F, class... Args>
std::pair<Tensor, Tensor> jvp(F f, const std::tuple<Args...>& primals, const std::vector<Tensor>& tangents,
                              std::vector<int> wrt = {0}, std::source_location loc = std::source_location::current()) {
  std::vector<Tensor> flat, flat_tangents;
  std::vector<bool> mask;
  std::apply([&](const auto&... args) { detail::flatten_marked(wrt, flat, mask, loc, args...); }, primals);
  size_t next = 0;
  for (bool marked : mask) flat_tangents.push_back(marked && next < tangents.size() ? tangents[next++] : Tensor());
  if (next != tangents.size()) {
    detail::fail(
        "jvp",
        std::to_string(tangents.size()) + " tangents given for " + std::to_string(next) + " differentiated leaves",
        &loc);
  }
  auto fn = [&](const std::vector<Tensor>& params) {
    const Tensor* p = params.data();
    std::tuple<Args...> rebuilt = std::apply(
        [&](const auto&... args) { return std::tuple<Args...>{tree::rebuild<Tensor, Tensor>(args, p)...}; }, primals);
    return std::vector<Tensor>{std::apply(f, rebuilt)};
  };
  std::vector<Tensor> r = detail::jvp_flat(fn, flat, flat_tangents, loc);
  return {r[0], r[1]};
}

}  // namespace fluxion
