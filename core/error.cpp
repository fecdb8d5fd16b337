#include "fluxion/error.h"

namespace fluxion::detail {

namespace {
thread_local CallSite* innermost_site = nullptr;
}  // namespace

CallSite::CallSite(const std::source_location& loc, bool covers) : loc_(loc), covers_(covers), outer_(innermost_site) {
  innermost_site = this;
}

CallSite::~CallSite() { innermost_site = outer_; }

const std::source_location* CallSite::report(const std::source_location* loc) {
  const CallSite* outermost = nullptr;
  const CallSite* covering = nullptr;
  for (const CallSite* s = innermost_site; s; s = s->outer_) {
    outermost = s;
    if (s->covers_) covering = s;
  }
  if (covering) return &covering->loc_;
  if ((!loc || loc->line() == 0) && outermost) return &outermost->loc_;
  return loc;
}

void fail(std::string_view op, const std::string& what, const std::source_location* loc) {
  loc = CallSite::report(loc);
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
