#include "data/json.h"

#include <charconv>
#include <cstdio>

namespace fluxion::data::json {

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view s) : text_(s) {}

  Value document() {
    Value v = value(0);
    skip_space();
    if (pos_ != text_.size()) error("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    throw JsonError(what + " at byte " + std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!take(c)) error(std::string("expected '") + c + "'");
  }
  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value value(int depth) {
    if (depth > kMaxDepth) error("nesting deeper than " + std::to_string(kMaxDepth));
    skip_space();
    if (pos_ >= text_.size()) error("unexpected end of text");
    Value v;
    char c = text_[pos_];
    if (c == '{') {
      ++pos_;
      v.kind = Value::Kind::Object;
      if (take('}')) return v;
      do {
        skip_space();
        std::string key = string();
        expect(':');
        v.members.push_back(Member{std::move(key), value(depth + 1)});
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      ++pos_;
      v.kind = Value::Kind::Array;
      if (take(']')) return v;
      do v.items.push_back(value(depth + 1));
      while (take(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Value::Kind::String;
      v.text = string();
    } else if (literal("true")) {
      v.kind = Value::Kind::Bool;
      v.boolean = true;
    } else if (literal("false")) {
      v.kind = Value::Kind::Bool;
    } else if (literal("null")) {
      v.kind = Value::Kind::Null;
    } else {
      v.kind = Value::Kind::Number;
      v.text = number();
    }
    return v;
  }

  std::string number() {
    size_t start = pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == from) error("malformed number");
    };
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') ++pos_;
    else digits();
    if (pos_ < text_.size() && text_[pos_] == '.') ++pos_, digits();
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      digits();
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  unsigned hex4() {
    if (pos_ + 4 > text_.size()) error("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else error("bad hex digit in \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    if (pos_ >= text_.size() || text_[pos_] != '"') error("expected a string");
    ++pos_;
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) error("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) error("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair
            if (!literal("\\u")) error("unpaired surrogate");
            unsigned low = hex4();
            if (low < 0xDC00 || low >= 0xE000) error("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            error("unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: error(std::string("bad escape \\") + e);
      }
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

int64_t Value::as_int() const {
  int64_t v = 0;
  if (kind != Kind::Number) throw JsonError("expected an integer");
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) throw JsonError("'" + text + "' is not a 64-bit integer");
  return v;
}

const Value* Value::find(std::string_view key) const {
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

Value parse(std::string_view text) { return Parser(text).document(); }

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace fluxion::data::json
