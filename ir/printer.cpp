// The text form (docs/ir.md): values renumbered per region in definition order,
// attributes that differ from their defaults in declaration order, doubles in shortest
// round-trip form. The parser reads exactly this text back, and the structural hash is the
// hash of it with every region's nodes in canonical order (canonical_order.cpp).
#include <charconv>
#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace fluxion::ir {
namespace {

void put_double(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "nan";
  } else if (std::isinf(v)) {
    out += v > 0 ? "inf" : "-inf";
  } else {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof(buf), v);
    out.append(buf, r.ptr);
  }
}

template <class T>
void put_list(std::string& out, const std::vector<T>& v) {
  out += "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ",";
    if constexpr (std::is_same_v<T, double>) {
      put_double(out, v[i]);
    } else {
      out += std::to_string(v[i]);
    }
  }
  out += "]";
}

// A string in double quotes: '"' and '\\' escaped with a backslash, other bytes outside the
// printable ASCII range as \xHH, so that IR text stays one line per node.
void put_quoted(std::string& out, std::string_view text) {
  constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u >= 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
}

void put_attrs(std::string& out, const Attrs& a) {
  const Attrs d;
  std::string s;
  auto sep = [&] { s += s.empty() ? "{" : ", "; };
  auto list = [&](const char* name, const std::vector<int64_t>& v, const std::vector<int64_t>& def) {
    if (v != def) sep(), s += name, s += "=", put_list(s, v);
  };
  auto num = [&](const char* name, int64_t v, int64_t def) {
    if (v != def) sep(), s += name, s += "=", s += std::to_string(v);
  };
  list("axes", a.axes, d.axes);
  list("perm", a.perm, d.perm);
  list("starts", a.starts, d.starts);
  list("limits", a.limits, d.limits);
  list("strides", a.strides, d.strides);
  list("window", a.window, d.window);
  list("padding", a.padding, d.padding);
  list("dilation", a.dilation, d.dilation);
  num("groups", a.groups, d.groups);
  num("length", a.length, d.length);
  num("carries", a.carries, d.carries);
  num("xs", a.xs, d.xs);
  num("max_iters", a.max_iters, d.max_iters);
  num("ranks", a.ranks, d.ranks);
  num("root", a.root, d.root);
  if (a.reverse) sep(), s += "reverse=true";
  if (a.f16_sums) sep(), s += "f16_sums=true";
  if (!a.data.empty()) sep(), s += "data=", put_list(s, a.data);
  if (!a.text.empty()) sep(), s += "text=", put_quoted(s, a.text);
  if (!s.empty()) out += " " + s + "}";
}

class Printer {
 public:
  Printer(bool with_locations, bool canonical) : with_locations_(with_locations), canonical_(canonical) {}

  void program(const Program& p) {
    Names names;
    out_ += "func @" + p.name;
    params(p.body, names);
    out_ += " -> (";
    for (size_t i = 0; i < p.body.results.size(); ++i) out_ += (i ? ", " : "") + type(p.body, p.body.results[i]);
    out_ += ") {\n";
    body(p.body, names, 1, "return");
    out_ += "}\n";
  }

  void region(const Region& r) {
    Names names;
    out_ += "region";
    params(r, names);
    out_ += " {\n";
    body(r, names, 1, "yield");
    out_ += "}\n";
  }

  std::string take() { return std::move(out_); }

 private:
  using Names = std::unordered_map<ValueId, int>;

  // The printer also shows broken IR in verifier and pass errors, so an id that is undefined
  // ("%?7", the raw id) or has no type ("?") is printed rather than thrown on.
  std::string name(const Names& names, ValueId v) const {
    auto it = names.find(v);
    return it == names.end() ? "%?" + std::to_string(v) : "%" + std::to_string(it->second);
  }

  static std::string type(const Region& r, ValueId v) {
    return v >= 0 && static_cast<size_t>(v) < r.types.size() ? r.type(v).str() : "?";
  }

  void params(const Region& r, Names& names) {
    out_ += "(";
    for (size_t i = 0; i < r.params.size(); ++i) {
      ValueId v = r.params[i];
      names[v] = static_cast<int>(names.size());
      out_ += (i ? ", " : "") + name(names, v) + ": " + type(r, v);
    }
    out_ += ")";
  }

  void body(const Region& r, Names& names, int depth, const char* terminator) {
    std::string indent(static_cast<size_t>(2 * depth), ' ');
    std::vector<size_t> order;
    if (canonical_) {
      order = canonical_order(r);
    } else {
      for (size_t i = 0; i < r.nodes.size(); ++i) order.push_back(i);
    }
    for (size_t at : order) {
      const Node& n = r.nodes[at];
      out_ += indent;
      for (size_t i = 0; i < n.results.size(); ++i) {
        names[n.results[i]] = static_cast<int>(names.size());
        out_ += (i ? ", " : "") + name(names, n.results[i]);
      }
      out_ += n.results.empty() ? "= " : " = ";  // no results: "= cond %0 :"
      out_ += op_name(n.op);
      for (size_t i = 0; i < n.operands.size(); ++i) out_ += (i ? ", " : " ") + name(names, n.operands[i]);
      put_attrs(out_, n.attrs);
      out_ += " :";
      for (size_t i = 0; i < n.results.size(); ++i) out_ += (i ? ", " : " ") + type(r, n.results[i]);
      if (with_locations_ && n.line) out_ += "  // " + std::string(n.file) + ":" + std::to_string(n.line);
      out_ += "\n";
      std::vector<const char*> names_of_regions = region_names(n.op);
      for (size_t i = 0; i < n.regions.size(); ++i) {
        Names inner;
        out_ += indent + "  " + (i < names_of_regions.size() ? names_of_regions[i] : "region");
        params(n.regions[i], inner);
        out_ += " {\n";
        body(n.regions[i], inner, depth + 2, "yield");
        out_ += indent + "  }\n";
      }
    }
    out_ += indent + terminator;
    for (size_t i = 0; i < r.results.size(); ++i) out_ += (i ? ", " : " ") + name(names, r.results[i]);
    out_ += "\n";
  }

  bool with_locations_;
  bool canonical_;
  std::string out_;
};

}  // namespace

std::string print(const Program& p, bool with_locations) {
  Printer printer(with_locations, false);
  printer.program(p);
  return printer.take();
}

std::string print_canonical(const Program& p) {
  Printer printer(false, true);
  printer.program(p);
  return printer.take();
}

std::string print_attrs(const Attrs& a) {
  std::string out;
  put_attrs(out, a);
  return out;
}

std::vector<const char*> region_names(Op op) {
  switch (op_info(op).cls) {
    case OpClass::Scan: return {"body"};
    case OpClass::While: return {"cond", "body"};
    case OpClass::Cond: return {"then", "else"};
    case OpClass::CustomVjp: return {"primal", "backward"};
    case OpClass::CustomJvp: return {"primal", "tangent"};
    default: return {};
  }
}

std::string print(const Region& r) {
  Printer printer(false, false);
  printer.region(r);
  return printer.take();
}

std::string print_canonical(const Region& r) {
  Printer printer(false, true);
  printer.region(r);
  return printer.take();
}

}  // namespace fluxion::ir
