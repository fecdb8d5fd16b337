// Building GLSL text: the few shapes every emitter writes (an infix operation, a call, a
// declaration), so that generated expressions are parenthesised one way everywhere.
#pragma once

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace fluxion::vulkan::glsl {

// `(a op b)`.
inline std::string infix(std::string_view a, std::string_view op, std::string_view b) {
  std::string s;
  s.reserve(a.size() + op.size() + b.size() + 4);
  s.append("(").append(a).append(" ").append(op).append(" ").append(b).append(")");
  return s;
}

// `f(arg, ...)`.
inline std::string call(std::string_view f, const std::vector<std::string>& args) {
  std::string s(f);
  s += "(";
  for (size_t i = 0; i < args.size(); ++i) s.append(i ? ", " : "").append(args[i]);
  return s + ")";
}

// `type name = init;`.
inline std::string declaration(std::string_view type, std::string_view name, std::string_view init) {
  std::string s(type);
  s.append(" ").append(name).append(" = ").append(init).append(";");
  return s;
}

// Whether `e` is a variable name or an integer literal: an expression that costs nothing to repeat.
inline bool is_name(std::string_view e) {
  if (e.empty()) return false;
  for (size_t i = 0; i < e.size(); ++i) {
    char c = e[i];
    bool word = std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (!word && (i != 0 || c != '-')) return false;
  }
  return true;
}

}  // namespace fluxion::vulkan::glsl
