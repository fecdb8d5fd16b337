// The op table's sample programs: for every op of ir/ops.def, a "one-op program" in IR text
// (docs/ir.md) applying it to parameters, the parameters' input domains, and the tolerance a
// backend's result needs. The op-table coverage test runs each through every backend and both
// differentiation modes; the batching test runs each under vmap. Floats are f64 (gradients are
// checked in double); i32 and bool only where the op needs them. Each parameter has an input
// domain that avoids kinks and poles, as gradcheck.h's unary_cases do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/test_names.h"
#include "ir/ir.h"

namespace fluxion::testing {

// The values drawn for one parameter (the dtype comes from the program): uniform in [lo, hi);
// Signed: |value| in [lo, hi) with a random sign (both sides of a kink at 0, never near it);
// Integral: whole numbers in [lo, hi] (ties for comparisons and extremes; i32 and bool
// parameters are always integral, bools 0/1).
struct Input {
  enum Kind { Uniform, Signed, Integral };
  double lo = -2, hi = 2;
  Kind kind = Uniform;
};
inline Input uniform(double lo, double hi) { return {lo, hi, Input::Uniform}; }
inline Input both_signs(double lo, double hi) { return {lo, hi, Input::Signed}; }
inline Input integral(double lo, double hi) { return {lo, hi, Input::Integral}; }
inline const Input kBool = integral(0, 1);
// Any Philox key.
inline const Input kKey = integral(-2147483648.0, 2147483647.0);

struct Sample {
  std::string op;             // the op's IR name (ops.def)
  std::string text;           // the program, as ir::print writes it
  std::vector<Input> inputs;  // one per parameter
  Tol tol = Tol::arith();     // backend vs evaluator (docs/testing.md); integers and bools exact
};

inline std::string program(const std::string& params, const std::string& results, const std::string& body,
                           const std::string& ret) {
  return "func @main(" + params + ") -> (" + results + ") {\n" + body + "  return " + ret + "\n}\n";
}

// op %0 : f64[2,3]
inline Sample unary(const std::string& op, Input in, const std::string& t = "f64[2,3]", Tol tol = Tol::trans()) {
  return {op, program("%0: " + t, t, "  %1 = " + op + " %0 : " + t + "\n", "%1"), {in}, tol};
}

// op %0, %1 : result
inline Sample binary(const std::string& op, Input a, Input b, const std::string& t = "f64[2,3]",
                     const std::string& result = "", Tol tol = Tol::trans()) {
  std::string r = result.empty() ? t : result;
  return {op, program("%0: " + t + ", %1: " + t, r, "  %2 = " + op + " %0, %1 : " + r + "\n", "%2"), {a, b}, tol};
}

// The attributes shared by the convolution samples and by the pooling samples.
inline const std::string kConv = "{strides=[1,1], padding=[1,0,0,1], dilation=[1,1]}";
inline const std::string kConvStrided = "{strides=[2,1], padding=[1,0,0,1], dilation=[1,1]}";
inline const std::string kPool = "{strides=[2,1], window=[2,2], padding=[1,0,0,1]}";

// Every op of ops.def, in its order. To add an op: one entry (a program that applies it to
// parameters, the parameters' input domains, and the tolerance of docs/testing.md that its
// result needs on a backend).
inline std::vector<Sample> samples() {
  const Input any = uniform(-2, 2);
  std::vector<Sample> s = {
      // Elementwise unary (domains of gradcheck.h's unary_cases).
      unary("neg", any, "f64[2,3]", Tol::arith()),
      unary("abs", both_signs(0.1, 2), "f64[2,3]", Tol::arith()),
      unary("sign", integral(-2, 2), "f64[2,3]", Tol::arith()),
      unary("square", any, "f64[2,3]", Tol::arith()),
      unary("relu", both_signs(0.1, 2), "f64[2,3]", Tol::arith()),
      unary("exp", any),
      unary("expm1", any),
      unary("log", uniform(0.5, 3)),
      unary("log1p", uniform(-0.5, 3)),
      unary("sqrt", uniform(0.5, 3)),
      unary("rsqrt", uniform(0.5, 3)),
      unary("sin", uniform(-3, 3)),
      unary("cos", uniform(-3, 3)),
      unary("tanh", any),
      unary("sigmoid", uniform(-4, 4)),
      unary("softplus", uniform(-4, 4)),
      unary("erf", any),
      unary("floor", uniform(-3, 3), "f64[2,3]", Tol::arith()),
      unary("not", kBool, "bool[2,3]"),
      unary("stop_gradient", any, "f64[2,3]", Tol::arith()),
      // Elementwise binary.
      binary("add", any, any, "f64[2,3]", "", Tol::arith()),
      binary("sub", any, any, "f64[2,3]", "", Tol::arith()),
      binary("mul", any, any, "f64[2,3]", "", Tol::arith()),
      binary("div", any, both_signs(0.5, 2), "f64[2,3]", "", Tol::arith()),
      binary("max", any, any, "f64[2,3]", "", Tol::arith()),
      binary("min", any, any, "f64[2,3]", "", Tol::arith()),
      binary("pow", uniform(0.5, 2), uniform(-2, 2)),
      binary("atan2", both_signs(0.2, 2), both_signs(0.2, 2)),  // all four quadrants, off the cut
      binary("and", kBool, kBool, "bool[2,3]"),
      binary("or", kBool, kBool, "bool[2,3]"),
      // Comparisons, on whole numbers so that ties occur.
      binary("eq", integral(-1, 1), integral(-1, 1), "f64[2,3]", "bool[2,3]"),
      binary("ne", integral(-1, 1), integral(-1, 1), "f64[2,3]", "bool[2,3]"),
      binary("lt", integral(-1, 1), integral(-1, 1), "f64[2,3]", "bool[2,3]"),
      binary("le", integral(-1, 1), integral(-1, 1), "f64[2,3]", "bool[2,3]"),
      binary("gt", integral(-1, 1), integral(-1, 1), "f64[2,3]", "bool[2,3]"),
      binary("ge", integral(-1, 1), integral(-1, 1), "f64[2,3]", "bool[2,3]"),
      {"select",
       program("%0: bool[2,3], %1: f64[2,3], %2: f64[2,3]", "f64[2,3]", "  %3 = select %0, %1, %2 : f64[2,3]\n", "%3"),
       {kBool, any, any}},
      // From f32 (the float conversion carries the derivative) to f64, and to i32 (truncation
      // toward zero).
      {"convert",
       program("%0: f32[2,3]", "f64[2,3], i32[2,3]", "  %1 = convert %0 : f64[2,3]\n  %2 = convert %0 : i32[2,3]\n",
               "%1, %2"),
       {both_signs(0.1, 3)}},
      // Creation.
      {"constant", program("", "f64[2,2]", "  %0 = constant {data=[1.5,-2,0.25,1e-300]} : f64[2,2]\n", "%0"), {}},
      {"iota", program("", "i32[2,3]", "  %0 = iota {axes=[1]} : i32[2,3]\n", "%0"), {}},
      // Reductions.
      {"reduce_sum",
       program("%0: f64[2,3]", "f64[2]", "  %1 = reduce_sum %0 {axes=[1]} : f64[2]\n", "%1"),
       {any},
       Tol::sum(3, 2)},
      {"reduce_max", program("%0: f64[2,3]", "f64[3]", "  %1 = reduce_max %0 {axes=[0]} : f64[3]\n", "%1"), {any}},
      {"reduce_min", program("%0: f64[2,3]", "f64[2]", "  %1 = reduce_min %0 {axes=[1]} : f64[2]\n", "%1"), {any}},
      {"argmax", program("%0: f64[2,3]", "i32[2]", "  %1 = argmax %0 {axes=[1]} : i32[2]\n", "%1"), {integral(-1, 1)}},
      {"argmin", program("%0: f64[2,3]", "i32[3]", "  %1 = argmin %0 {axes=[0]} : i32[3]\n", "%1"), {integral(-1, 1)}},
      // Linear algebra, convolution, pooling and their transposes.
      {"matmul",
       program("%0: f64[2,3], %1: f64[3,2]", "f64[2,2]", "  %2 = matmul %0, %1 : f64[2,2]\n", "%2"),
       {any, any},
       Tol::sum(3, 4)},
      {"conv2d",
       program("%0: f64[1,2,3,3], %1: f64[2,2,2,2]", "f64[1,2,3,3]",
               "  %2 = conv2d %0, %1 " + kConv + " : f64[1,2,3,3]\n", "%2"),
       {any, any},
       Tol::sum(8, 4)},
      {"max_pool2d",
       program("%0: f64[1,1,4,4]", "f64[1,1,2,4]", "  %1 = max_pool2d %0 " + kPool + " : f64[1,1,2,4]\n", "%1"),
       {any}},
      {"avg_pool2d",
       program("%0: f64[1,1,4,4]", "f64[1,1,2,4]", "  %1 = avg_pool2d %0 " + kPool + " : f64[1,1,2,4]\n", "%1"),
       {any},
       Tol::sum(4, 2)},
      {"conv2d_input_grad",
       program("%0: f64[1,2,2,3], %1: f64[2,2,2,2]", "f64[1,2,4,3]",
               "  %2 = conv2d_input_grad %0, %1 " + kConvStrided + " : f64[1,2,4,3]\n", "%2"),
       {any, any},
       Tol::sum(8, 4)},
      {"conv2d_weight_grad",
       program("%0: f64[1,2,3,3], %1: f64[1,2,3,3]", "f64[2,2,2,2]",
               "  %2 = conv2d_weight_grad %0, %1 " + kConv + " : f64[2,2,2,2]\n", "%2"),
       {any, any},
       Tol::sum(9, 4)},
      {"max_pool2d_grad",
       program("%0: f64[1,1,4,4], %1: f64[1,1,2,4]", "f64[1,1,4,4]",
               "  %2 = max_pool2d_grad %0, %1 " + kPool + " : f64[1,1,4,4]\n", "%2"),
       {any, any},
       Tol::sum(4, 2)},
      {"max_pool2d_select",
       program("%0: f64[1,1,4,4], %1: f64[1,1,4,4]", "f64[1,1,2,4]",
               "  %2 = max_pool2d_select %0, %1 " + kPool + " : f64[1,1,2,4]\n", "%2"),
       {any, any}},
      {"avg_pool2d_grad",
       program("%0: f64[1,1,2,4]", "f64[1,1,4,4]", "  %1 = avg_pool2d_grad %0 " + kPool + " : f64[1,1,4,4]\n", "%1"),
       {any},
       Tol::sum(4, 2)},
      // Views and data movement.
      {"reshape", program("%0: f64[2,3]", "f64[3,2]", "  %1 = reshape %0 : f64[3,2]\n", "%1"), {any}},
      {"transpose",
       program("%0: f64[2,3,2]", "f64[2,2,3]", "  %1 = transpose %0 {perm=[2,0,1]} : f64[2,2,3]\n", "%1"),
       {any}},
      {"broadcast", program("%0: f64[3,1]", "f64[2,3,4]", "  %1 = broadcast %0 : f64[2,3,4]\n", "%1"), {any}},
      {"slice",
       program("%0: f64[4,5]", "f64[2,3]", "  %1 = slice %0 {starts=[1,0], limits=[4,5], strides=[2,2]} : f64[2,3]\n",
               "%1"),
       {any}},
      {"pad",
       program("%0: f64[2,3]", "f64[4,5]", "  %1 = pad %0 {strides=[2,1], padding=[1,0,0,2]} : f64[4,5]\n", "%1"),
       {any}},
      {"concat",
       program("%0: f64[2,1], %1: f64[2,2], %2: f64[2,1]", "f64[2,4]",
               "  %3 = concat %0, %1, %2 {axes=[1]} : f64[2,4]\n", "%3"),
       {any, any, any}},
      // Indices one past either end, which are clamped.
      {"gather",
       program("%0: f64[3,4], %1: i32[2,4]", "f64[2,4]", "  %2 = gather %0, %1 {axes=[0]} : f64[2,4]\n", "%2"),
       {any, integral(-1, 3)}},
      {"take",
       program("%0: f64[3,4], %1: i32[2]", "f64[3,2]", "  %2 = take %0, %1 {axes=[1]} : f64[3,2]\n", "%2"),
       {any, integral(-1, 4)}},
      // Repeated indices and indices one past either end (clamped); the sums are in index order
      // on every backend, as in the evaluator.
      {"scatter_add",
       program("%0: f64[2,4,3], %1: i32[4]", "f64[2,3,3]", "  %2 = scatter_add %0, %1 {axes=[1]} : f64[2,3,3]\n", "%2"),
       {any, integral(-1, 3)}},
      // Random numbers.
      {"rng_uniform", program("%0: i32[2]", "f64[2,3]", "  %1 = rng_uniform %0 : f64[2,3]\n", "%1"), {kKey}},
      {"rng_normal",
       program("%0: i32[2]", "f64[2,3]", "  %1 = rng_normal %0 : f64[2,3]\n", "%1"),
       {kKey},
       Tol::trans()},
      {"rng_fold",
       program("%0: i32[2], %1: i32[]", "i32[2]", "  %2 = rng_fold %0, %1 : i32[2]\n", "%2"),
       {kKey, integral(0, 1000)}},
      // Collectives, in a job of one rank (tests/distributed/ runs them on several ranks).
      unary("all_reduce_sum", any, "f64[2,3]", Tol::arith()),
      unary("all_reduce_mean", any, "f64[2,3]", Tol::arith()),
      unary("all_reduce_max", any, "f64[2,3]", Tol::arith()),
      unary("all_reduce_min", any, "f64[2,3]", Tol::arith()),
      unary("all_gather", any, "f64[2,3]", Tol::arith()),
      unary("reduce_scatter_sum", any, "f64[2,3]", Tol::arith()),
      unary("broadcast_from", any, "f64[2,3]", Tol::arith()),
      {"rank_index", program("", "i32[]", "  %0 = rank_index : i32[]\n", "%0"), {}},
      // Control flow: a carry, a per-step input and a capture.
      {"scan",
       program("%0: f64[2], %1: f64[3,2], %2: f64[2]", "f64[2], f64[3]",
               "  %3, %4 = scan %0, %1, %2 {length=3, carries=1, xs=1} : f64[2], f64[3]\n"
               "    body(%0: i32[], %1: f64[2], %2: f64[2], %3: f64[2]) {\n"
               "      %4 = mul %1, %2 : f64[2]\n"
               "      %5 = add %4, %3 : f64[2]\n"
               "      %6 = reduce_sum %5 {axes=[0]} : f64[]\n"
               "      yield %5, %6\n"
               "    }\n",
               "%3, %4"),
       {uniform(-1.5, 1.5), uniform(-1.5, 1.5), any},
       Tol::sum(2, 16)},
      // The carry grows by 1.5x to 2x a step from a sum in [1, 2), so it stops after 2 to 5
      // steps, with the sum well away from the bound.
      {"while",
       program("%0: f64[2], %1: f64[2]", "f64[2]",
               "  %2 = while %0, %1 {carries=1, max_iters=8} : f64[2]\n"
               "    cond(%0: f64[2], %1: f64[2]) {\n"
               "      %2 = reduce_sum %0 {axes=[0]} : f64[]\n"
               "      %3 = constant {data=[6]} : f64[]\n"
               "      %4 = lt %2, %3 : bool[]\n"
               "      yield %4\n"
               "    }\n"
               "    body(%0: f64[2], %1: f64[2]) {\n"
               "      %2 = mul %0, %1 : f64[2]\n"
               "      yield %2\n"
               "    }\n",
               "%2"),
       {uniform(0.5, 1), uniform(1.5, 2)}},
      {"cond",
       program("%0: bool[], %1: f64[2,2]", "f64[2,2]",
               "  %2 = cond %0, %1 : f64[2,2]\n"
               "    then(%0: f64[2,2]) {\n"
               "      %1 = sin %0 : f64[2,2]\n"
               "      yield %1\n"
               "    }\n"
               "    else(%0: f64[2,2]) {\n"
               "      %1 = neg %0 : f64[2,2]\n"
               "      yield %1\n"
               "    }\n",
               "%2"),
       {kBool, any},
       Tol::trans()},
      // sin with its reverse rule (adjoint * cos x); forward mode differentiates the primal.
      {"custom_vjp",
       program("%0: f64[3]", "f64[3]",
               "  %1 = custom_vjp %0 {carries=1} : f64[3]\n"
               "    primal(%0: f64[3]) {\n"
               "      %1 = sin %0 : f64[3]\n"
               "      yield %1\n"
               "    }\n"
               "    backward(%0: f64[3], %1: f64[3], %2: f64[3]) {\n"
               "      %3 = cos %0 : f64[3]\n"
               "      %4 = mul %2, %3 : f64[3]\n"
               "      yield %4\n"
               "    }\n",
               "%1"),
       {uniform(-3, 3)},
       Tol::trans()},
      // sin with its tangent rule (tangent * cos x); reverse mode transposes the rule.
      {"custom_jvp",
       program("%0: f64[3]", "f64[3]",
               "  %1 = custom_jvp %0 {carries=1} : f64[3]\n"
               "    primal(%0: f64[3]) {\n"
               "      %1 = sin %0 : f64[3]\n"
               "      yield %1\n"
               "    }\n"
               "    tangent(%0: f64[3], %1: f64[3]) {\n"
               "      %2 = cos %0 : f64[3]\n"
               "      %3 = mul %1, %2 : f64[3]\n"
               "      yield %3\n"
               "    }\n",
               "%1"),
       {uniform(-3, 3)},
       Tol::trans()},
      // An effect: prints its operand (the sample's runs print a line each) and returns nothing.
      {"debug_print",
       program("%0: f64[2,3]", "f64[2,3]", "  = debug_print %0 {text=\"op table sample {}\"} :\n", "%0"),
       {any}},
  };
  return s;
}

// The sample's inputs depend on its op's name only, not on its place in the table.
inline uint32_t seed_of(const std::string& op) {
  uint32_t h = 2166136261u;
  for (char c : op) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

inline std::vector<double> draw(DType t, int64_t n, const Input& in, uint32_t seed) {
  if (t == DType::boolean) return random_ints(n, 0, 1, seed);
  if (t == DType::i32 || in.kind == Input::Integral) {
    return random_ints(n, static_cast<int64_t>(in.lo), static_cast<int64_t>(in.hi), seed);
  }
  std::vector<double> v = random_doubles(n, in.lo, in.hi, seed);
  if (in.kind == Input::Signed) {
    std::vector<double> sign = random_ints(n, 0, 1, seed + 1);
    for (size_t i = 0; i < v.size(); ++i) v[i] = sign[i] != 0 ? -v[i] : v[i];
  }
  return round_all(t, v);
}

// The sample's inputs; another `draw_index` draws other values from the same domains.
inline std::vector<Array> make_inputs(const ir::Program& p, const Sample& s, uint32_t draw_index = 0) {
  std::vector<Array> in;
  std::vector<TensorType> types = p.body.param_types();
  for (size_t i = 0; i < types.size(); ++i) {
    const TensorType& t = types[i];
    in.push_back(make(
        t.dtype,
        draw(t.dtype, t.numel(), s.inputs.at(i), seed_of(s.op) + 101 * static_cast<uint32_t>(i) + 7777 * draw_index),
        t.shape));
  }
  return in;
}

}  // namespace fluxion::testing
