#include "fluxion/error.h"

namespace fluxion::detail {

void fail(std::string_view op, const std::string& what, const std::source_location* loc) {
  std::string msg = "fluxion: op '" + std::string(op) + "': " + what;
  if (loc && loc->line() != 0) {
    msg += " (at " + std::string(loc->file_name()) + ":" + std::to_string(loc->line()) + ")";
  }
  throw Error(msg);
}

}  // namespace fluxion::detail
