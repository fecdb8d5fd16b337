// The primitives of the shared per-element lowering (kernel/lowering.h) as GLSL: values are
// expressions, indices are int expressions, and loops and bound indices are statements the
// kernel writes as it goes.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "backends/vulkan/glsl_kernel.h"
#include "kernel/lowering.h"
#include "runtime/philox.h"

namespace fluxion::vulkan {

class GlslKernel::Renderer {
 public:
  using V = std::string;
  explicit Renderer(GlslKernel& k) : emitter_(k) {}

  // Elements.
  V constant(DType t, double v) { return emitter_.constant(t, v); }
  V neg(const V& a, DType) { return "(-" + a + ")"; }
  V add(const V& a, const V& b, DType) { return glsl::infix(a, "+", b); }
  V sub(const V& a, const V& b, DType) { return glsl::infix(a, "-", b); }
  V mul(const V& a, const V& b, DType) { return glsl::infix(a, "*", b); }
  V fdiv(const V& a, const V& b, DType t) {
    // lavapipe folds x / 0.0 to 0 even with NaN and infinity preservation requested; x * inf is
    // kept. A zero divisor that is a constant is written as a literal (GlslKernel::at).
    double inf = std::numeric_limits<double>::infinity();
    if (b == emitter_.constant(t, 0.0)) return glsl::infix(a, "*", emitter_.constant(t, inf));
    if (b == emitter_.constant(t, -0.0)) return glsl::infix(a, "*", emitter_.constant(t, -inf));
    return glsl::infix(a, "/", b);
  }
  V idiv(const V& a, const V& b) { return glsl::infix(a, "/", b); }
  V mul_add(const V& x, const V& y, const V& acc, DType) { return glsl::infix(acc, "+", glsl::infix(x, "*", y)); }
  V sum(const V& acc, const V& x, DType) { return glsl::infix(acc, "+", x); }
  V compare(kernel::Compare c, const V& a, const V& b, DType) { return index_compare(c, a, b); }
  V select(const V& c, const V& a, const V& b) { return "(" + c + " ? " + a + " : " + b + ")"; }
  V logic_and(const V& a, const V& b) { return glsl::infix(a, "&&", b); }
  V logic_or(const V& a, const V& b) { return glsl::infix(a, "||", b); }
  V logic_not(const V& a) { return "(!" + a + ")"; }
  V is_nan(const V& a) { return glsl::call("isnan", {a}); }
  V abs(const V& a, DType) { return glsl::call("abs", {a}); }
  V max(const V& a, const V& b, DType t) { return extremum("max", a, b, t); }
  V min(const V& a, const V& b, DType t) { return extremum("min", a, b, t); }
  // Fluxion's own math library (glsl_math.cpp): GLSL's built-ins are not accurate enough.
  V math(std::string_view f, DType t, const std::vector<V>& args) { return math_call(f, t, args); }
  // To f16 or bf16 from f64 or i32 through a float rounded to odd, which compute() rounds once.
  V round_to(const V& x, DType t) { return glsl::call(t == DType::f16 ? "fx_round_f16" : "fx_round_bf16", {x}); }
  V convert(const V& a, DType from, DType to) {
    if (is_half(to) && (from == DType::f64 || from == DType::i32)) return glsl::call("fx_odd_float", {a});
    return glsl::call(glsl_type(to), {a});
  }

  // Indices.
  V index(int64_t c) { return std::to_string(c); }
  V index_add(const V& a, const V& b) { return glsl::infix(a, "+", b); }
  V index_sub(const V& a, const V& b) { return glsl::infix(a, "-", b); }
  V index_mul(const V& a, const V& b) { return glsl::infix(a, "*", b); }
  V index_div(const V& a, int64_t d) { return glsl::infix(a, "/", std::to_string(d)); }
  V index_rem(const V& a, int64_t d) { return glsl::infix(a, "%", std::to_string(d)); }
  V index_compare(kernel::Compare c, const V& a, const V& b) {
    static const char* const kOps[] = {"==", "!=", "<", "<=", ">", ">="};
    return glsl::infix(a, kOps[static_cast<size_t>(c)], b);
  }
  V clamp_index(const V& i, int64_t dim) { return glsl::call("clamp", {i, "0", std::to_string(dim - 1)}); }
  V bind(const V& i) { return glsl::is_name(i) ? i : emitter_.declare("int", "u", i); }
  V bind(const V& x, DType t) { return glsl::is_name(x) ? x : emitter_.temp(t, x); }
  V element_to_index(const V& x) { return x; }
  V index_to_element(const V& i, DType t) { return convert(i, DType::i32, t); }

  // Data and control.
  V at(ir::ValueId v, const std::vector<V>& idx) { return emitter_.at(v, idx); }
  V at_flat(ir::ValueId v, const V& flat) { return emitter_.load_flat(v, flat); }
  void store_flat(ir::ValueId v, const V& flat, const V& x) { emitter_.store_flat(v, flat, x); }
  template <class Body>
  void when(const V& cond, Body&& body) {
    emitter_.line("if (" + cond + ")");
    emitter_.block(body);
  }
  template <class Body>
  std::vector<V> loop(int64_t lo, int64_t hi, const std::vector<kernel::Carried<V>>& carried, Body&& body) {
    std::vector<V> vars;
    for (const auto& c : carried) vars.push_back(emitter_.declare(type_of(c), "s", c.init));
    emitter_.loop(lo, hi, [&](const V& i) {
      std::vector<V> next = body(i, vars);
      // Every update is computed from the old values before any is assigned.
      for (size_t j = 0; j < vars.size(); ++j) next[j] = emitter_.declare(type_of(carried[j]), "n", next[j]);
      for (size_t j = 0; j < vars.size(); ++j) emitter_.line(vars[j] + " = " + next[j] + ";");
    });
    return vars;
  }
  // Philox4x32-10 (glsl_math.cpp), its words turned into numbers as runtime/philox.h does.
  V random(ir::Op op, DType t, const V& key0, const V& key1, const V& counter) {
    V words = emitter_.declare("uvec2", "w",
                               "fx_philox4(uvec4(uint(" + counter + "), 0u, 0u, 0u), " + key(key0, key1) + ").xy");
    if (op == ir::Op::RngNormal) {
      // Box-Muller in the widest type the device has.
      DType c = emitter_.target_.float64 ? DType::f64 : DType::f32;
      std::string T = glsl_type(c);
      V u1 = "((" + T + "(" + words + ".x) + " + constant(c, 1) + ") * " + constant(c, 0x1p-32) + ")";
      V u2 = "(" + T + "(" + words + ".y) * " + constant(c, 0x1p-32) + ")";
      V z = math_call("sqrt", c, {"-2.0 * " + math_call("log", c, {u1})}) + " * " +
            math_call("cos", c, {constant(c, 6.283185307179586) + " * " + u2});
      return convert(z, c, t);
    }
    // The format's significant bits of word 0, exact in every width (runtime/philox.h).
    if (t != DType::f64) {
      int kept = runtime::philox::uniform_bits(t);
      return "(float(" + words + ".x >> " + std::to_string(32 - kept) + ") * " +
             constant(DType::f32, std::ldexp(1.0, -kept)) + ")";
    }
    return "((double(" + words + ".x) * 2097152.0lf + double(" + words + ".y >> 11)) * " +
           constant(DType::f64, 0x1p-53) + ")";
  }
  V rng_fold(const V& key0, const V& key1, const V& data, const V& word) {
    V words =
        emitter_.declare("uvec4", "w", "fx_philox4(uvec4(uint(" + data + "), 0u, 1u, 0u), " + key(key0, key1) + ")");
    return "int(" + words + "[" + word + "])";
  }

 private:
  static V key(const V& key0, const V& key1) { return "uvec2(uint(" + key0 + "), uint(" + key1 + "))"; }
  static std::string type_of(const kernel::Carried<V>& c) { return c.index ? "int" : glsl_type(c.dtype); }
  static V math_call(std::string_view f, DType t, const std::vector<V>& args) {
    return glsl::call("fx_" + std::string(f) + (t == DType::f64 ? "d" : "f"), args);
  }
  // GLSL's max and min leave the result for a NaN operand undefined; Fluxion's propagate it.
  static V extremum(const char* f, const V& a, const V& b, DType t) {
    V plain = glsl::call(f, {a, b});
    if (!is_float(t)) return plain;
    return "(isnan(" + a + ") ? " + a + " : isnan(" + b + ") ? " + b + " : " + plain + ")";
  }
  GlslKernel& emitter_;
};

}  // namespace fluxion::vulkan
