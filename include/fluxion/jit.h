// jit: turns a C++ function over Tensors into a compiled program over Arrays.
#pragma once

#include <any>
#include <charconv>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <source_location>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/backend.h"
#include "fluxion/compiled.h"
#include "fluxion/f16_sums.h"
#include "fluxion/tensor.h"
#include "fluxion/tree.h"

namespace fluxion {

// The untemplated core of jit: traces `fn` on parameters of `inputs` types (a fresh trace even
// when called inside another), then simplifies and compiles the program for `backend`. Raises
// Error when tracing fails (bad shapes, dtypes, axes...) or the backend is unavailable.
Compiled compile_flat(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                      const std::vector<TensorType>& inputs, Backend backend,
                      std::source_location loc = std::source_location::current());

// fluxion::load, except that a program whose compiled form does not run here (another CPU's
// instruction set, an older helper interface) is re-compiled from the IR the file holds, for
// the file's backend. Raises load's Error for a file that is not a readable artifact.
Compiled load_or_compile(const std::string& path);

namespace detail {
// The cache key of a call: the tree structure and leaf types of its arguments.
template <class T>
void signature(const T& t, std::string& out) {
  if constexpr (std::is_same_v<T, Array>) {
    // Appended in place (TensorType::str() would build a temporary string).
    out += dtype_name(t.dtype());
    out += '[';
    for (int64_t d : t.shape()) {
      char digits[24];
      auto end = std::to_chars(digits, digits + sizeof digits, d).ptr;
      out.append(digits, end);
      out += ',';
    }
    out += ']';
  } else if constexpr (requires { std::tuple_size<T>::value; }) {
    out += "(";
    std::apply([&](const auto&... xs) { ((signature(xs, out), out += ","), ...); }, t);
    out += ")";
  } else {
    out += "[";
    for (const auto& x : t) signature(x, out), out += ",";
    out += "]";
  }
}

// The number of parameters of a callable whose call operator is not a template (a lambda with
// `auto` parameters has none to count).
template <class F>
struct Arity {
  static constexpr bool known = false;
};
template <class F>
requires requires { &F::operator(); }
struct Arity<F> : Arity<decltype(&F::operator())> {};
template <class C, class R, class... Ps>
struct Arity<R (C::*)(Ps...) const> {
  static constexpr bool known = true;
  static constexpr size_t value = sizeof...(Ps);
};
template <class C, class R, class... Ps>
struct Arity<R (C::*)(Ps...)> : Arity<R (C::*)(Ps...) const> {};
template <class R, class... Ps>
struct Arity<R (*)(Ps...)> {
  static constexpr bool known = true;
  static constexpr size_t value = sizeof...(Ps);
};
}  // namespace detail

// A compiled function. Call it with Arrays (or trees of Arrays: vectors, arrays, pairs,
// tuples); `f` is called with Tensors in the same structure and returns a Tensor or a tree of
// Tensors, and the call returns Arrays in that structure. `f` is traced once per input
// signature (tree structure, dtypes, shapes) and the compiled program is reused; calls with
// new shapes trace again. Thread-safe; copies share the cache.
template <class F>
class Jit {
 public:
  // `loc`, where jit was called, names errors of the calls that have no line of their own (a
  // while loop over its max_iters, a run-time check).
  explicit Jit(F f, Backend backend = default_backend(), std::source_location loc = std::source_location::current())
      : state_(std::make_shared<State>(std::move(f), backend, loc)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    if constexpr (!callable<Args...>()) {
      diagnose<Args...>();
    } else {
      using R = Result<Args...>;
      const Entry& e = entry(args...);  // may trace, and the trace may call other jitted functions
      // Reused per thread so that a steady-state call allocates only its results.
      thread_local std::vector<Array> flat;
      struct Release {  // the buffer must not keep the caller's arrays alive, also when run throws
        ~Release() { flat.clear(); }
      } release;
      (tree::flatten<Array>(args, flat), ...);
      detail::CallSite site(state_->loc, /*covers=*/false);
      std::vector<Array> outs = e.compiled.run(flat);
      const Array* it = outs.data();
      return tree::rebuild<Tensor, Array>(std::any_cast<const R&>(e.out_like), it);
    }
  }

  // The compiled program for these arguments (traced and compiled on first use).
  template <class... Args>
  Compiled lower(const Args&... args) const {
    if constexpr (!callable<Args...>()) {
      diagnose<Args...>();
      return Compiled();
    } else {
      return entry(args...).compiled;
    }
  }

  Backend backend() const { return state_->backend; }
  // Number of signatures traced so far.
  size_t cache_size() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->cache.size();
  }

 private:
  template <class... Args>
  using Result = std::invoke_result_t<const F&, tree::Rebind<Args, Array, Tensor>...>;

  // Whether f takes Tensors shaped like these Arrays; when not, diagnose says why in a sentence
  // instead of a page of template errors.
  template <class... Args>
  static constexpr bool callable() {
    if constexpr ((tree::is_tree<Args, Array> && ...))
      return std::is_invocable_v<const F&, tree::Rebind<Args, Array, Tensor>...>;
    else return false;
  }
  template <class... Args>
  static void diagnose() {
    static_assert((tree::is_tree<Args, Array> && ...),
                  "fluxion::jit: a jitted function is called with fluxion::Array arguments, or std::vector, "
                  "std::array, std::pair or std::tuple trees of them; a std::vector<float> or a number is not an "
                  "Array: make one, fluxion::Array(values, shape) or fluxion::Array::scalar(x)");
    if constexpr ((tree::is_tree<Args, Array> && ...)) {
      if constexpr (detail::Arity<F>::known)
        static_assert(sizeof...(Args) == detail::Arity<F>::value,
                      "fluxion::jit: the jitted function is called with another number of arguments than it "
                      "takes (the comparison below reads: arguments given == parameters taken)");
      static_assert(std::is_invocable_v<const F&, tree::Rebind<Args, Array, Tensor>...>,
                    "fluxion::jit: the function cannot take these arguments as Tensors: each Array argument is "
                    "passed as a fluxion::Tensor (a tree of Arrays as the same tree of Tensors), one per parameter");
    }
  }

  struct Entry {
    Compiled compiled;
    std::any out_like;  // the traced result: its tree structure rebuilds each call's outputs
  };
  struct State {
    State(F f, Backend b, std::source_location l) : f(std::move(f)), backend(b), loc(l) {}
    F f;
    Backend backend;
    std::source_location loc;
    mutable std::mutex mu;
    std::map<std::string, Entry> cache;
  };

  template <class... Args>
  const Entry& entry(const Args&... args) const {
    thread_local std::string signature_buffer;  // reused: no allocation on a cache hit
    signature_buffer.clear();
    (detail::signature(args, signature_buffer), ...);
    if (F16Sums::active()) signature_buffer += "|f16_sums";
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      auto it = state_->cache.find(signature_buffer);
      if (it != state_->cache.end()) return it->second;
    }
    std::string key = signature_buffer;  // tracing may reuse the buffer for nested jitted calls
    // Trace outside the lock: the user's function may take time or call other jitted code.
    std::vector<TensorType> types;
    std::vector<Array> flat;
    (tree::flatten<Array>(args, flat), ...);
    for (const Array& a : flat) types.push_back(a.type());
    Entry e;
    auto fn = [&](const std::vector<Tensor>& params) {
      [[maybe_unused]] const Tensor* p = params.data();  // unused for a function of no arguments
      std::tuple<tree::Rebind<Args, Array, Tensor>...> targs{tree::rebuild<Array, Tensor>(args, p)...};
      Result<Args...> r = std::apply(state_->f, targs);
      std::vector<Tensor> outs;
      tree::flatten<Tensor>(r, outs);
      e.out_like = std::move(r);
      return outs;
    };
    e.compiled = compile_flat(fn, types, state_->backend, state_->loc);
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->cache.emplace(std::move(key), std::move(e)).first->second;
  }

  std::shared_ptr<State> state_;
};

// jit(f, backend): see Jit.
template <class F>
Jit<std::decay_t<F>> jit(F&& f, Backend backend = default_backend(),
                         std::source_location loc = std::source_location::current()) {
  return Jit<std::decay_t<F>>(std::forward<F>(f), backend, loc);
}

}  // namespace fluxion
