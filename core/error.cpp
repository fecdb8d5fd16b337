#include "fluxion/error.h"

namespace fluxion::detail {

void fail(std::string_view op, const std::string& what, const std::source_location* loc) {
  std::string msg = "fluxion: op '" + std::string(op) + "': " + what;
  if (loc && loc->line() != 0) {
    msg += " (at " + std::string(loc->file_name()) + ":" + std::to_string(loc->line()) + ")";
  }
  throw Error(msg);
}

std::string without_prefix(const Error& e) {
  std::string_view m = e.what();
  if (m.starts_with("fluxion: ")) m.remove_prefix(9);
  return std::string(m);
}

}  // namespace fluxion::detail
