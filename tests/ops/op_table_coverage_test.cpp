// Op-table coverage: every op of jit/ir/ops.def has a sample program here, and each sample is
// run on every backend against the reference evaluator and, for ops marked Grad, through reverse
// and forward mode against central finite differences. A new op without a sample fails
// OpTable.EveryOpHasASample, naming the op; so it cannot be added without these checks.
//
// A sample is a "one-op program" in IR text (docs/ir.md): parameters -> the op -> results, plus
// a second op only where the op needs one (a predicate for a loop). Floats are f64 (gradients
// are checked in double); i32 and bool only where the op needs them. Each parameter has an
// input domain that avoids kinks and poles, as gradcheck.h's unary_cases do.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <set>
#include <string>
#include <vector>

#include "common/finite_differences.h"
#include "common/test_names.h"
#include "driver/pipeline.h"
#include "jit/autodiff/autodiff.h"
#include "jit/eval/interpreter.h"
#include "jit/ir/ir.h"

namespace ir = fluxion::ir;
using fx::TensorType;

namespace {

// ---- The table.

// The values drawn for one parameter (the dtype comes from the program): uniform in [lo, hi);
// Signed: |value| in [lo, hi) with a random sign (both sides of a kink at 0, never near it);
// Integral: whole numbers in [lo, hi] (ties for comparisons and extremes; i32 and bool
// parameters are always integral, bools 0/1).
struct Input {
  enum Kind { Uniform, Signed, Integral };
  double lo = -2, hi = 2;
  Kind kind = Uniform;
};
Input uniform(double lo, double hi) { return {lo, hi, Input::Uniform}; }
Input both_signs(double lo, double hi) { return {lo, hi, Input::Signed}; }
Input integral(double lo, double hi) { return {lo, hi, Input::Integral}; }
const Input kBool = integral(0, 1);
// Any Philox key.
const Input kKey = integral(-2147483648.0, 2147483647.0);

struct Sample {
  std::string op;             // the op's IR name (ops.def)
  std::string text;           // the program, as ir::print writes it
  std::vector<Input> inputs;  // one per parameter
  Tol tol = Tol::arith();     // backend vs evaluator (docs/testing.md); integers and bools exact
};

std::string program(const std::string& params, const std::string& results, const std::string& body,
                    const std::string& ret) {
  return "func @main(" + params + ") -> (" + results + ") {\n" + body + "  return " + ret + "\n}\n";
}

// op %0 : f64[2,3]
Sample unary(const std::string& op, Input in, const std::string& t = "f64[2,3]", Tol tol = Tol::trans()) {
  return {op, program("%0: " + t, t, "  %1 = " + op + " %0 : " + t + "\n", "%1"), {in}, tol};
}

// op %0, %1 : result
Sample binary(const std::string& op, Input a, Input b, const std::string& t = "f64[2,3]",
              const std::string& result = "", Tol tol = Tol::trans()) {
  std::string r = result.empty() ? t : result;
  return {op, program("%0: " + t + ", %1: " + t, r, "  %2 = " + op + " %0, %1 : " + r + "\n", "%2"), {a, b}, tol};
}

// The attributes shared by the convolution samples and by the pooling samples.
const std::string kConv = "{strides=[1,1], padding=[1,0,0,1], dilation=[1,1]}";
const std::string kConvStrided = "{strides=[2,1], padding=[1,0,0,1], dilation=[1,1]}";
const std::string kPool = "{strides=[2,1], window=[2,2], padding=[1,0,0,1]}";

// Every op of ops.def, in its order. To add an op: one entry (a program that applies it to
// parameters, the parameters' input domains, and the tolerance of docs/testing.md that its
// result needs on a backend).
std::vector<Sample> samples() {
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
  };
  return s;
}

// ---- Running a sample.

const Sample* find_sample(const std::vector<Sample>& table, const std::string& op) {
  for (const Sample& s : table) {
    if (s.op == op) return &s;
  }
  return nullptr;
}

// The sample's inputs depend on its op's name only, not on its place in the table.
uint32_t seed_of(const std::string& op) {
  uint32_t h = 2166136261u;
  for (char c : op) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

std::vector<double> draw(DType t, int64_t n, const Input& in, uint32_t seed) {
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

std::vector<Array> make_inputs(const ir::Program& p, const Sample& s) {
  std::vector<Array> in;
  std::vector<TensorType> types = p.body.param_types();
  for (size_t i = 0; i < types.size(); ++i) {
    const TensorType& t = types[i];
    in.push_back(make(t.dtype, draw(t.dtype, t.numel(), s.inputs.at(i), seed_of(s.op) + 101 * static_cast<uint32_t>(i)),
                      t.shape));
  }
  return in;
}

bool contains_op(const ir::Region& r, ir::Op op) {
  for (const ir::Node& n : r.nodes) {
    if (n.op == op) return true;
    for (const ir::Region& inner : n.regions) {
      if (contains_op(inner, op)) return true;
    }
  }
  return false;
}

std::vector<Array> run_on(const ir::Program& p, Backend b, const std::vector<Array>& inputs) {
  return fx::compiler::compile(p, b).executable->run(inputs);
}

ir::Program as_program(ir::Region r) {
  ir::Program p;
  p.body = std::move(r);
  return p;
}

// Whether the op's derivative is checked: it is marked Grad and its sample has float
// parameters and float results.
bool checks_derivatives(const ir::Program& p, ir::Op op) {
  auto any_float = [](const std::vector<TensorType>& ts) {
    return std::any_of(ts.begin(), ts.end(), [](const TensorType& t) { return fx::is_float(t.dtype); });
  };
  return ir::is_differentiable(op) && any_float(p.body.param_types()) && any_float(p.body.result_types());
}

// The fixed weights of the loss sum(result * w), one array per result (empty for non-floats).
std::vector<std::vector<double>> loss_weights(const ir::Program& p, const std::string& op) {
  std::vector<std::vector<double>> w;
  std::vector<TensorType> results = p.body.result_types();
  for (size_t r = 0; r < results.size(); ++r) {
    if (!fx::is_float(results[r].dtype)) {
      w.emplace_back();
      continue;
    }
    uint32_t seed = seed_of(op) + 7919 * static_cast<uint32_t>(r + 1);
    w.push_back(round_all(results[r].dtype, draw(DType::f64, results[r].numel(), both_signs(0.5, 1.5), seed)));
  }
  return w;
}

// loss = sum over float results r of reduce_sum(r * w_r), appended to the sample's own region.
ir::Region loss_region(const ir::Program& p, const std::vector<std::vector<double>>& weights) {
  ir::Region r = p.body;
  std::vector<ir::ValueId> results = r.results;
  ir::ValueId total = -1;
  for (size_t i = 0; i < results.size(); ++i) {
    TensorType t = r.type(results[i]);
    if (!fx::is_float(t.dtype)) continue;
    ir::Attrs data;
    data.data = weights[i];
    ir::ValueId w = r.add(ir::Op::Constant, {}, data, {t})[0];
    ir::ValueId term = r.add(ir::Op::Mul, {results[i], w})[0];
    if (t.rank() > 0) {
      ir::Attrs all;
      for (int64_t d = 0; d < t.rank(); ++d) all.axes.push_back(d);
      term = r.add(ir::Op::ReduceSum, {term}, all)[0];
    }
    if (t.dtype != DType::f64) term = r.add(ir::Op::Convert, {term}, {}, {TensorType{DType::f64, {}}})[0];
    total = total < 0 ? term : r.add(ir::Op::Add, {total, term})[0];
  }
  r.results = {total};
  return r;
}

// Central finite differences (common/finite_differences.h) of every float result of the sample
// with respect to every element of every float parameter, on the evaluator in f64:
// jacobian[p][j][r][i] = d result r element i / d parameter p element j.
using Jacobian = std::vector<std::vector<std::vector<std::vector<double>>>>;
Jacobian finite_differences(const ir::Program& p, const std::vector<Array>& inputs) {
  return central_differences(inputs, [&](const std::vector<Array>& moved) {
    std::vector<Array> out = fx::interp::run(p, moved);
    std::vector<std::vector<double>> values(out.size());
    for (size_t r = 0; r < out.size(); ++r) {
      if (fx::is_float(out[r].dtype())) values[r] = out[r].to_doubles();
    }
    return values;
  });
}

class OpTable : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(OpTable);

}  // namespace

// ---- The table is complete and right.

TEST(OpTableCoverage, EveryOpHasASample) {
  std::vector<Sample> table = samples();
  for (const ir::OpInfo& info : ir::all_ops()) {
    EXPECT_NE(find_sample(table, info.name), nullptr)
        << "op '" << info.name << "' (ir::Op " << static_cast<int>(info.op)
        << ") has no sample program: add one to samples() in tests/ops/op_table_coverage_test.cpp (a program "
           "applying the op to parameters, their input domains and the result's tolerance; docs/testing.md)";
  }
  std::set<std::string> seen;
  for (const Sample& s : table) {
    ir::Op op;
    EXPECT_TRUE(ir::op_from_name(s.op, &op)) << "sample for '" << s.op << "', which is not an op of jit/ir/ops.def";
    EXPECT_TRUE(seen.insert(s.op).second) << "two samples for op '" << s.op << "'";
  }
}

TEST(OpTableCoverage, EverySampleParsesAndContainsItsOp) {
  for (const Sample& s : samples()) {
    SCOPED_TRACE("op '" + s.op + "'");
    ir::Op op;
    if (!ir::op_from_name(s.op, &op)) continue;  // reported by EveryOpHasASample
    try {
      ir::Program p = ir::parse(s.text);
      ir::verify(p);
      EXPECT_TRUE(contains_op(p.body, op)) << "the sample program does not apply '" << s.op << "':\n" << s.text;
      EXPECT_EQ(s.inputs.size(), p.body.params.size()) << "one input domain per parameter";
      if (ir::is_differentiable(op)) {
        EXPECT_TRUE(checks_derivatives(p, op)) << "a Grad op's sample needs float parameters and float results";
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "the sample for '" << s.op << "' does not parse: " << e.what() << "\n" << s.text;
    }
  }
}

// ---- Every backend agrees with the evaluator and with finite differences.
//
// One program per sample and backend (compiling dominates the run time, on lavapipe above all):
//   (parameters..., tangents of the float parameters...) ->
//   (results..., [d loss / d each float parameter...], [tangents of the float results...])
// where loss = sum over the float results r of sum(r * w_r) with fixed weights, its gradient is
// autodiff::value_and_grad's region inlined, and the tangents are autodiff::emit_jvp's. The
// bracketed parts are there for ops marked Grad. Simplification merges the repeated primal ops.

TEST_P(OpTable, SamplesMatchTheEvaluatorAndFiniteDifferences) {
  FLUXION_REQUIRE_F64(backend());
  const std::string on = std::string(" on ") + fx::backend_name(backend());
  for (const Sample& s : samples()) {
    SCOPED_TRACE("op '" + s.op + "'" + on);
    ir::Op op;
    if (!ir::op_from_name(s.op, &op)) continue;  // reported by EveryOpHasASample
    try {
      ir::Program p = ir::parse(s.text);
      std::vector<Array> inputs = make_inputs(p, s);
      std::vector<Array> want = fx::interp::run(p, inputs);
      std::vector<TensorType> params = p.body.param_types(), results = p.body.result_types();
      bool derivatives = checks_derivatives(p, op);

      ir::Region checked;
      std::vector<ir::ValueId> args, tangents(params.size(), -1);
      for (const TensorType& t : params) args.push_back(checked.add_param(t));
      std::vector<Array> in = inputs;
      std::vector<std::vector<double>> direction(params.size());
      std::vector<bool> wrt(params.size(), false);
      if (derivatives) {
        for (size_t k = 0; k < params.size(); ++k) {
          if (!fx::is_float(params[k].dtype)) continue;
          wrt[k] = true;
          tangents[k] = checked.add_param(params[k]);
          direction[k] = draw(params[k].dtype, params[k].numel(), uniform(-1, 1),
                              seed_of(s.op) + 31 * static_cast<uint32_t>(k) + 5);
          in.push_back(make(params[k].dtype, direction[k], params[k].shape));
        }
      }

      // Forward mode: the primal and its tangents.
      std::vector<ir::ValueId> outputs, out_tangents;
      bool forward = false;
      if (derivatives) {
        try {
          ir::Region with_tangents = checked;
          out_tangents = fx::autodiff::emit_jvp(with_tangents, p.body, args, tangents, &outputs);
          checked = std::move(with_tangents);
          forward = true;
        } catch (const std::exception& e) {
          ADD_FAILURE() << "op '" << s.op << "' is marked Grad in ops.def but its forward rule fails: " << e.what();
        }
      }
      if (!forward) outputs = ir::inline_region(checked, p.body, args);
      checked.results = outputs;

      // Reverse mode: value_and_grad of the loss.
      std::vector<std::vector<double>> w;
      bool reverse = false;
      if (derivatives) {
        w = loss_weights(p, s.op);
        try {
          ir::Region grad = fx::autodiff::value_and_grad(loss_region(p, w), wrt);
          // The gradients only: the loss's value would cost a reduction kernel (compiling it is
          // most of the run time on lavapipe) and adds nothing to the results compared above.
          std::vector<ir::ValueId> value_and_grads = ir::inline_region(checked, grad, args);
          checked.results.insert(checked.results.end(), value_and_grads.begin() + 1, value_and_grads.end());
          reverse = true;
        } catch (const std::exception& e) {
          ADD_FAILURE() << "op '" << s.op << "' is marked Grad in ops.def but its reverse rule fails: " << e.what();
        }
      }
      if (forward) {
        for (size_t r = 0; r < results.size(); ++r) {
          if (!fx::is_float(results[r].dtype)) continue;
          ir::ValueId t = out_tangents.at(r);
          if (t < 0) {  // a zero tangent: the finite differences say whether that is right
            ir::Attrs zero;
            zero.data = {0};
            t = checked.add(ir::Op::Constant, {}, zero, {results[r]})[0];
          }
          checked.results.push_back(t);
        }
      }

      size_t expected = checked.results.size();
      std::vector<Array> got = run_on(as_program(std::move(checked)), backend(), in);
      if (got.size() != expected) {
        ADD_FAILURE() << "op '" << s.op << "'" << on << ": " << got.size() << " results, expected " << expected;
        continue;
      }
      for (size_t r = 0; r < want.size(); ++r) {
        EXPECT_ARRAY(got[r], want[r].dtype(), want[r].shape(), want[r].to_doubles(), s.tol)
            << "op '" << s.op << "'" << on << ": result " << r << " against the evaluator";
      }
      if (!derivatives) continue;
      Jacobian jac = finite_differences(p, inputs);
      size_t next = want.size();

      if (reverse) {
        // The loss's finite-difference gradient: w . (a column of the Jacobian).
        double f0 = 0;
        for (size_t r = 0; r < want.size(); ++r) {
          std::vector<double> v = want[r].to_doubles();
          for (size_t i = 0; i < w[r].size(); ++i) f0 += w[r][i] * v[i];
        }
        for (size_t k = 0; k < params.size(); ++k) {
          if (!wrt[k]) continue;
          const Array& grad_k = got[next++];
          if (grad_k.shape() != params[k].shape) {
            ADD_FAILURE() << "op '" << s.op << "'" << on << ": the gradient of parameter " << k << " has shape "
                          << fx::shape_str(grad_k.shape());
            continue;
          }
          std::vector<double> gv = grad_k.to_doubles();
          for (size_t j = 0; j < gv.size(); ++j) {
            double fd = 0;
            for (size_t r = 0; r < w.size(); ++r) {
              for (size_t i = 0; i < w[r].size(); ++i) fd += w[r][i] * jac[k][j][r][i];
            }
            EXPECT_NEAR(gv[j], fd, gradient_tolerance(fd, f0))
                << "op '" << s.op << "'" << on << ": reverse mode, d loss / d parameter " << k << " element " << j
                << " against finite differences";
          }
        }
      }

      if (forward) {
        // The directional finite difference along the tangents: J . direction.
        for (size_t r = 0; r < results.size(); ++r) {
          if (!fx::is_float(results[r].dtype)) continue;
          std::vector<double> tv = got[next++].to_doubles(), yv = want[r].to_doubles();
          for (size_t i = 0; i < tv.size(); ++i) {
            double fd = 0;
            for (size_t k = 0; k < params.size(); ++k) {
              for (size_t j = 0; j < direction[k].size(); ++j) fd += jac[k][j][r][i] * direction[k][j];
            }
            EXPECT_NEAR(tv[i], fd, gradient_tolerance(fd, yv[i]))
                << "op '" << s.op << "'" << on << ": forward mode, tangent of result " << r << " element " << i
                << " against finite differences";
          }
        }
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "op '" << s.op << "'" << on << " raised: " << e.what();
    }
  }
}
