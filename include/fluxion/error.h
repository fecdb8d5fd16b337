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
[[noreturn]] void fail(std::string_view op, const std::string& what,
                       const std::source_location* loc = nullptr);

// e's message without the "fluxion: " it starts with, for a message that wraps it.
std::string without_prefix(const Error& e);

}  // namespace detail
}  // namespace fluxion
