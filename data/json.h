// A small strict JSON reader and string escaper for the file formats Fluxion reads (the
// safetensors header). Inputs come from outside: every malformed input raises JsonError,
// nesting is bounded, nothing is assumed about sizes.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fluxion::data::json {

struct JsonError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Member;

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text;  // a string's contents, or a number's literal text
  std::vector<Value> items;                            // Array
  std::vector<Member> members;  // Object, in file order

  // The number as an exact integer; JsonError when it is not one or does not fit.
  int64_t as_int() const;
  // The member named `key`, or null.
  const Value* find(std::string_view key) const;
};

struct Member {
  std::string key;
  Value value;
};

// Parses one JSON value filling all of `text` (surrounding whitespace allowed).
Value parse(std::string_view text);
// `s` as a JSON string literal, quotes included.
std::string quote(std::string_view s);

}  // namespace fluxion::data::json
