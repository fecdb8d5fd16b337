// Looking inside traced code: fluxion::debug::print, like jax.debug.print, and fluxion::eager,
// which runs a function op by op as it traces it, like jax.disable_jit.
#pragma once

#include <any>
#include <concepts>
#include <functional>
#include <source_location>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "fluxion/array.h"
#include "fluxion/tensor.h"
#include "fluxion/tree.h"

namespace fluxion::debug {

// A print's format and the user's call site (the implicit conversion remembers the line, which a
// variadic function cannot take as a defaulted parameter).
struct Format {
  std::string_view text;
  std::source_location loc;
  template <typename S>
  requires std::convertible_to<const S&, std::string_view> Format(
      const S& text, std::source_location loc = std::source_location::current())  // NOLINT(google-explicit-constructor)
      : text(text), loc(loc) {}
};

// Prints `format` with each "{}" replaced by the next tensor's values ("{{" and "}}" print a
// brace) when the program runs, not when it is traced: every call of the compiled function
// prints again, on every backend, in program order with the other prints; inside scan and
// while_loop once per iteration, inside cond only from the branch taken. The line goes to the
// print handler (fluxion/runtime.h; standard output by default). A format whose field count is
// not the number of tensors raises Error at the call. Gradients pass by: under grad the forward
// values are printed once (a loop's reverse pass does not print them again), under vmap the
// whole batch. Values are read back from the device before they are printed, so a print
// splits a Vulkan program's submission there; it is a debugging aid, not free.
void print(Format format, const std::vector<Tensor>& values);

template <typename... T>
requires(std::convertible_to<const T&, const Tensor&>&&...) void print(Format format, const T&... values) {
  print(format, std::vector<Tensor>{values...});
}

// The value of `t`, a Tensor of a function that fluxion::eager is running: every op recorded up
// to here has been evaluated. Raises Error for a Tensor of a function being traced by jit (it
// has no values before the program runs), of a loop or branch body, or of a function grad or
// vmap traces (each has values per iteration or per example: print them).
Array value(const Tensor& t, std::source_location loc = std::source_location::current());

}  // namespace fluxion::debug

namespace fluxion {

namespace detail {
// Traces fn with every top-level op evaluated on the reference interpreter as it is recorded,
// the parameters bound to `inputs`; returns the values of fn's results.
std::vector<Array> run_eagerly(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                               const std::vector<Array>& inputs, std::source_location loc);
}  // namespace detail

// eager(f)(arrays...): f run op by op, each op evaluated on the reference interpreter as the
// line that records it runs, so that a debugger stepping through f can read any Tensor with
// debug::value and debug::print prints at once; returns what jit(f)(arrays...) returns. Nothing
// is compiled or cached: every call traces f again, and runs at the interpreter's speed (it
// holds every value as doubles). A loop or branch is one op: its body runs when the loop is
// recorded, not line by line.
template <class F>
class Eager {
 public:
  explicit Eager(F f, std::source_location loc = std::source_location::current()) : f_(std::move(f)), loc_(loc) {}

  template <class... Args>
  requires(tree::is_tree<Args, Array>&&...) auto operator()(const Args&... args) const {
    using R = std::invoke_result_t<const F&, tree::Rebind<Args, Array, Tensor>...>;
    std::vector<Array> flat;
    (tree::flatten<Array>(args, flat), ...);
    std::any like;  // the traced result: its tree structure rebuilds the outputs
    auto fn = [&](const std::vector<Tensor>& params) {
      [[maybe_unused]] const Tensor* p = params.data();  // unused for a function of no arguments
      std::tuple<tree::Rebind<Args, Array, Tensor>...> targs{tree::rebuild<Array, Tensor>(args, p)...};
      like = std::apply(f_, targs);
      std::vector<Tensor> outs;
      tree::flatten<Tensor>(std::any_cast<const R&>(like), outs);
      return outs;
    };
    std::vector<Array> outs = detail::run_eagerly(fn, flat, loc_);
    const Array* it = outs.data();
    return tree::rebuild<Tensor, Array>(std::any_cast<const R&>(like), it);
  }

 private:
  F f_;
  std::source_location loc_;
};

template <class F>
Eager<std::decay_t<F>> eager(F&& f, std::source_location loc = std::source_location::current()) {
  return Eager<std::decay_t<F>>(std::forward<F>(f), loc);
}

}  // namespace fluxion
