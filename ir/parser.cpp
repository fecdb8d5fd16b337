// Reads the text that print() writes. Every node is rebuilt through Region::add, so a parsed
// program passes the same shape rules as a traced one. Any input, however malformed, gives a
// fluxion::Error with a line and column (this parser faces files from outside).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <string>

#include "fluxion/error.h"
#include "ir/ir.h"

namespace fluxion::ir {
namespace {

// Bounds that keep a hostile text from exhausting the stack or overflowing a size computation.
// They are far beyond anything a traced program reaches; the shape rules apply the same 2^40
// element bound to every type they compute.
constexpr int kMaxDepth = 64;                       // nesting of regions
constexpr int64_t kMaxElements = int64_t{1} << 40;  // per written type, and per dimension

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Program program() {
    Program p;
    expect_word("func");
    expect("@");
    p.name = ident("a function name");
    Names names;
    params(p.body, names);
    expect("->");
    expect("(");
    std::vector<TensorType> declared_results;
    if (!accept(")")) {
      do declared_results.push_back(type()); while (accept(","));
      expect(")");
    }
    expect("{");
    body(p.body, names, "return", 0);
    expect("}");
    skip_space();
    if (pos_ != text_.size()) error("unexpected text after the end of the function");
    if (p.body.result_types() != declared_results) error("the returned values do not match the declared result types");
    return p;
  }

 private:
  using Names = std::map<int64_t, ValueId>;

  [[noreturn]] void error(const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') ++line, col = 1;
      else ++col;
    }
    detail::fail("parse", "line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
  }

  // Skips spaces, newlines and // comments (source locations).
  void skip_space() {
    while (pos_ < text_.size()) {
      if (std::isspace(static_cast<unsigned char>(text_[pos_]))) {
        ++pos_;
      } else if (text_.compare(pos_, 2, "//") == 0) {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  bool accept(std::string_view tok) {
    skip_space();
    if (text_.compare(pos_, tok.size(), tok) != 0) return false;
    pos_ += tok.size();
    return true;
  }

  void expect(std::string_view tok) {
    if (!accept(tok)) error("expected '" + std::string(tok) + "', found " + found());
  }

  // What stands at the cursor, for "expected X, found Y" (at most 12 characters of one line).
  std::string found() {
    skip_space();
    if (pos_ >= text_.size()) return "the end of the text";
    std::string_view rest = text_.substr(pos_, 12);
    return "'" + std::string(rest.substr(0, rest.find('\n'))) + "'";
  }

  bool peek_ident() {
    skip_space();
    return pos_ < text_.size() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_');
  }

  std::string ident(const char* what) {
    if (!peek_ident()) error(std::string("expected ") + what + ", found " + found());
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  void expect_word(std::string_view w) {
    skip_space();
    size_t at = pos_;
    if (ident(("'" + std::string(w) + "'").c_str()) != w) {
      pos_ = at;
      error("expected '" + std::string(w) + "', found " + found());
    }
  }

  int64_t integer() {
    skip_space();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), v);
    if (ec != std::errc() || p == text_.data() + pos_) error("expected an integer, found " + found());
    pos_ = static_cast<size_t>(p - text_.data());
    return v;
  }

  // A string as the printer writes it (put_quoted): in double quotes, with \\, \" and \xHH.
  std::string quoted() {
    expect("\"");
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) error("the string has no closing quote");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ < text_.size() && (text_[pos_] == '"' || text_[pos_] == '\\')) {
        out += text_[pos_++];
        continue;
      }
      unsigned value = 0;
      bool hex = pos_ + 3 <= text_.size() && text_[pos_] == 'x';
      if (hex) {
        auto [p, ec] = std::from_chars(text_.data() + pos_ + 1, text_.data() + pos_ + 3, value, 16);
        hex = ec == std::errc() && p == text_.data() + pos_ + 3;
      }
      if (!hex) error("expected \\\\, \\\" or \\xHH in a string, found " + found());
      out += static_cast<char>(value);
      pos_ += 3;
    }
  }

  // A double as the printer writes it: shortest round-trip decimal, or inf, -inf, nan.
  double number() {
    skip_space();
    bool neg = accept("-");
    if (neg && pos_ < text_.size() && text_[pos_] == '-') error("expected a number, found " + found());
    if (accept("inf")) return neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    if (accept("nan")) return std::numeric_limits<double>::quiet_NaN();
    double v = 0;
    auto [p, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), v);
    if (ec != std::errc() || p == text_.data() + pos_) error("expected a number, found " + found());
    pos_ = static_cast<size_t>(p - text_.data());
    return neg ? -v : v;
  }

  template <class T, class F>
  std::vector<T> list(F element) {
    std::vector<T> out;
    expect("[");
    if (accept("]")) return out;
    do out.push_back(element()); while (accept(","));
    expect("]");
    return out;
  }

  TensorType type() {
    std::string name = ident("a dtype");
    TensorType t;
    if (name == "f32") t.dtype = DType::f32;
    else if (name == "f64") t.dtype = DType::f64;
    else if (name == "i32") t.dtype = DType::i32;
    else if (name == "bool") t.dtype = DType::boolean;
    else if (name == "f16") t.dtype = DType::f16;
    else if (name == "bf16") t.dtype = DType::bf16;
    else error("unknown dtype '" + name + "' (expected f32, f64, i32, bool, f16 or bf16)");
    // Bounding the product of the non-zero dimensions bounds every partial product (strides,
    // element counts) that later code computes from this shape, zero dimensions included.
    int64_t n = 1;
    t.shape = list<int64_t>([&] {
      int64_t d = integer();
      if (d < 0 || (d > 0 && n > kMaxElements / d)) {
        error("dimension " + std::to_string(d) + " is negative or makes the type larger than 2^40 elements");
      }
      n *= std::max<int64_t>(d, 1);
      return d;
    });
    return t;
  }

  // A value reference "%N"; returns N.
  int64_t value_number() {
    expect("%");
    int64_t v = integer();
    if (v < 0) error("value numbers are >= 0");
    return v;
  }

  ValueId use(const Names& names) {
    skip_space();
    size_t at = pos_;
    int64_t v = value_number();
    auto it = names.find(v);
    if (it == names.end()) {
      pos_ = at;
      error("%" + std::to_string(v) + " is not defined before this use in its region");
    }
    return it->second;
  }

  void define(Names& names, int64_t number, ValueId id) {
    if (!names.emplace(number, id).second) error("%" + std::to_string(number) + " is defined twice");
  }

  void params(Region& r, Names& names) {
    expect("(");
    if (accept(")")) return;
    do {
      int64_t v = value_number();
      expect(":");
      define(names, v, r.add_param(type()));
    } while (accept(","));
    expect(")");
  }

  Attrs attrs() {
    Attrs a;
    if (!accept("{")) return a;
    std::vector<std::string> seen;
    do {
      skip_space();
      size_t key_at = pos_;
      std::string key = ident("an attribute name");
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
        pos_ = key_at;
        error("attribute '" + key + "' is given twice");
      }
      seen.push_back(key);
      expect("=");
      auto ints = [&] { return list<int64_t>([&] { return integer(); }); };
      if (key == "axes") a.axes = ints();
      else if (key == "perm") a.perm = ints();
      else if (key == "starts") a.starts = ints();
      else if (key == "limits") a.limits = ints();
      else if (key == "strides") a.strides = ints();
      else if (key == "window") a.window = ints();
      else if (key == "padding") a.padding = ints();
      else if (key == "dilation") a.dilation = ints();
      else if (key == "groups") a.groups = integer();
      else if (key == "length") a.length = integer();
      else if (key == "carries") a.carries = integer();
      else if (key == "xs") a.xs = integer();
      else if (key == "max_iters") a.max_iters = integer();
      else if (key == "ranks") a.ranks = integer();
      else if (key == "root") a.root = integer();
      else if (key == "reverse") a.reverse = boolean();
      else if (key == "f16_sums") a.f16_sums = boolean();
      else if (key == "data") a.data = list<double>([&] { return number(); });
      else if (key == "text") a.text = quoted();
      else error("unknown attribute '" + key + "'");
    } while (accept(","));
    expect("}");
    return a;
  }

  bool boolean() {
    std::string w = ident("true or false");
    if (w != "true" && w != "false") error("expected true or false, found '" + w + "'");
    return w == "true";
  }

  void body(Region& r, Names& names, std::string_view terminator, int depth) {
    if (depth > kMaxDepth) error("regions are nested too deeply");
    while (!peek_ident()) node(r, names, depth);
    expect_word(terminator);
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '%') {
      do r.results.push_back(use(names)); while (accept(","));
    }
  }

  void node(Region& r, Names& names, int depth) {
    // A node without results (a loop or cond that yields nothing) is written "= op ... :".
    std::vector<int64_t> result_numbers;
    if (!accept("=")) {
      do result_numbers.push_back(value_number()); while (accept(","));
      expect("=");
    }
    skip_space();
    size_t op_at = pos_;
    std::string name = ident("an op name");
    Op op;
    if (!op_from_name(name, &op)) {
      pos_ = op_at;
      error("unknown op '" + name + "'");
    }
    std::vector<ValueId> operands;
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '%') {
      do operands.push_back(use(names)); while (accept(","));
    }
    Attrs a = attrs();
    expect(":");
    std::vector<TensorType> types;
    if (!result_numbers.empty()) {
      do types.push_back(type()); while (accept(","));
    }
    if (result_numbers.size() != types.size()) {
      pos_ = op_at;
      error("the node names " + std::to_string(result_numbers.size()) + " result(s) but writes " +
            std::to_string(types.size()) + " type(s)");
    }
    std::vector<Region> regions;
    for (const char* region_name : region_names(op)) {
      skip_space();
      size_t name_at = pos_;
      if (ident("a region name") != region_name) {
        pos_ = name_at;
        error(std::string("expected region '") + region_name + "' of " + name + ", found " + found());
      }
      Region inner;
      Names inner_names;
      params(inner, inner_names);
      expect("{");
      body(inner, inner_names, "yield", depth + 1);
      expect("}");
      regions.push_back(std::move(inner));
    }
    // The written types are the declared types of declared-type ops; the other ops' rules ignore
    // them and compute their own, which must then agree with what is written.
    const std::vector<ValueId>* ids = nullptr;
    try {
      ids = &r.add(op, std::move(operands), std::move(a), types, std::move(regions));
    } catch (const Error& e) {
      pos_ = op_at;
      error(detail::without_prefix(e));
    }
    for (size_t i = 0; i < ids->size(); ++i) {
      if (i >= types.size() || r.type((*ids)[i]) != types[i]) {
        pos_ = op_at;
        error("the result types written do not match the op's shape rule, which gives " +
              r.type((*ids)[i]).str() + " for result " + std::to_string(i));
      }
    }
    if (ids->size() != types.size()) {
      pos_ = op_at;
      error("the op has " + std::to_string(ids->size()) + " result(s), " + std::to_string(types.size()) + " are written");
    }
    for (size_t i = 0; i < ids->size(); ++i) define(names, result_numbers[i], (*ids)[i]);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

Program parse(std::string_view text) { return Parser(text).program(); }

}  // namespace fluxion::ir
