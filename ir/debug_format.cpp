#include "ir/debug_format.h"

#include "fluxion/error.h"

namespace fluxion::ir {
namespace {

// Walks `format`, calling literal(c) for each character of text and field() for each field.
// Returns what is wrong with it, or "".
template <typename Literal, typename Field>
std::string walk(std::string_view format, Literal literal, Field field) {
  for (size_t i = 0; i < format.size(); ++i) {
    char c = format[i];
    char next = i + 1 < format.size() ? format[i + 1] : '\0';
    if (c == '{' && next == '}') {
      field();
    } else if ((c == '{' || c == '}') && next == c) {
      literal(c);
    } else if (c == '{' || c == '}') {
      return "the format \"" + std::string(format) + "\" has an unmatched '" + c + "' at character " +
             std::to_string(i) + " (a field is \"{}\"; write \"{{\" or \"}}\" for a brace)";
    } else {
      literal(c);
      continue;
    }
    ++i;
  }
  return "";
}

}  // namespace

int64_t format_fields(std::string_view format, std::string* error) {
  int64_t n = 0;
  std::string wrong = walk(
      format, [](char) {}, [&] { ++n; });
  if (wrong.empty()) return n;
  if (error) *error = std::move(wrong);
  return -1;
}

std::string fill_format(std::string_view format, const std::vector<std::string>& fields) {
  std::string out;
  size_t next = 0;
  std::string wrong = walk(
      format, [&](char c) { out += c; },
      [&] {
        if (next < fields.size()) out += fields[next];
        ++next;
      });
  if (!wrong.empty()) detail::fail("debug_print", wrong);
  return out;
}

}  // namespace fluxion::ir
