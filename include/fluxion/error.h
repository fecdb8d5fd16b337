// fluxion::Error, the one exception type every layer raises for bad input and failed calls.
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fluxion {

// Raised for every user-visible failure: shape/dtype/axis errors at trace time, bad files,
// failed device calls. The message names the op, the operands involved, what was expected
// and, when known, the user's source location.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

// Throws Error with the message "op 'OP': WHAT (at FILE:LINE)". `loc` may be null when the
// failure has no user call site (a parsed IR file, a run-time check).
[[noreturn]] void fail(std::string_view op, const std::string& what, const std::source_location* loc = nullptr);

// e's message without the "fluxion: " it starts with, for a message that wraps it.
std::string without_prefix(const Error& e);

// A call of the user's into the library, active on this thread while it runs, so that an error
// raised inside names the user's line rather than the library's. A site that `covers` the code
// under it (a layer's forward pass, whose ops are the library's) stands for every location
// raised below it; any other site (a jitted call, a compiled program's run) only names errors
// that have no location of their own (run-time checks). The outermost site of a kind wins: it
// is the user's.
class CallSite {
 public:
  CallSite(const std::source_location& loc, bool covers);
  ~CallSite();
  CallSite(const CallSite&) = delete;
  CallSite& operator=(const CallSite&) = delete;

  // The location fail() reports for `loc` (which may be null) on this thread now.
  static const std::source_location* report(const std::source_location* loc);

 private:
  std::source_location loc_;
  bool covers_;
  CallSite* outer_;
};

}  // namespace detail
}  // namespace fluxion
