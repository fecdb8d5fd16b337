// Elementwise ops, convert, constant and iota on the interpreter: each checked against its
// definition in docs/ir.md, including the edge cases (NaN, zero, i32 wrapping, f32 rounding).
#include <climits>
#include <cmath>
#include <limits>
#include <numbers>

#include "interp/program_builder.h"

using namespace interp_test;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<double> unary(Op o, const std::vector<double>& x) { return run_op(o, {f64(x)}).to_doubles(); }

}  // namespace

TEST(InterpElementwise, UnaryFloatEdgeCases) {
  expect_same(unary(Op::Neg, {1.5, -2, 0}), {-1.5, 2, 0}, "neg");
  expect_same(unary(Op::Abs, {-2.5, 3, kNaN}), {2.5, 3, kNaN}, "abs");
  expect_same(unary(Op::Sign, {-2.5, 0, 7, kNaN}), {-1, 0, 1, kNaN}, "sign");
  expect_same(unary(Op::Square, {-3, 0.5}), {9, 0.25}, "square");
  expect_same(unary(Op::Relu, {-3, 0, 2.5, kNaN}), {0, 0, 2.5, kNaN}, "relu = max(x, 0), NaN propagates");
  expect_same(unary(Op::Exp, {0, 1, -kInf}), {1, std::exp(1.0), 0}, "exp");
  expect_same(unary(Op::Expm1, {0, 1e-20}), {0, 1e-20}, "expm1 keeps tiny values");
  expect_same(unary(Op::Log, {1, 0, -1}), {0, -kInf, kNaN}, "log");
  expect_same(unary(Op::Log1p, {0, 1e-20, -1}), {0, 1e-20, -kInf}, "log1p");
  expect_same(unary(Op::Sqrt, {4, 0, -1}), {2, 0, kNaN}, "sqrt");
  expect_same(unary(Op::Rsqrt, {4, 0.25, 0}), {0.5, 2, kInf}, "rsqrt = 1/sqrt");
  expect_same(unary(Op::Sin, {0, std::numbers::pi / 2}), {0, 1}, "sin");
  expect_same(unary(Op::Cos, {0}), {1}, "cos");
  expect_same(unary(Op::Tanh, {0, 1000, -1000}), {0, 1, -1}, "tanh");
  expect_same(unary(Op::Floor, {-2.5, 2.5, -0.0, 3}), {-3, 2, 0, 3}, "floor");
  expect_same(unary(Op::Erf, {0, 10, -10}), {0, 1, -1}, "erf");
  // Stable forms: no overflow at large |x|.
  expect_same(unary(Op::Sigmoid, {0, 1000, -1000}), {0.5, 1, 0}, "sigmoid");
  expect_near(unary(Op::Sigmoid, {2, -2}), {1 / (1 + std::exp(-2.0)), 1 / (1 + std::exp(2.0))}, 1e-15, "sigmoid");
  expect_same(unary(Op::Softplus, {1000, -1000}), {1000, 0}, "softplus");
  expect_near(unary(Op::Softplus, {0}), {std::log(2.0)}, 1e-15, "softplus");
  expect_near(unary(Op::Softplus, {3, -3}), {std::log1p(std::exp(3.0)), std::log1p(std::exp(-3.0))}, 1e-15,
              "softplus");
  expect_same(run_op(Op::StopGradient, {i32({-4, 9})}).to_doubles(), {-4, 9}, "stop_gradient is the identity");
  EXPECT_EQ(run_op(Op::Not, {boolean({true, false})}).to_vector<bool>(), (std::vector<bool>{false, true}));
}

TEST(InterpElementwise, I32UnaryWraps) {
  Array x = i32({INT_MIN, -5, 0, 9, 65536, 46341, 123456789});
  EXPECT_EQ(run_op(Op::Neg, {x}).to_vector<int32_t>(), (std::vector<int32_t>{INT_MIN, 5, 0, -9, -65536, -46341, -123456789}));
  EXPECT_EQ(run_op(Op::Abs, {x}).to_vector<int32_t>(), (std::vector<int32_t>{INT_MIN, 5, 0, 9, 65536, 46341, 123456789}));
  EXPECT_EQ(run_op(Op::Sign, {x}).to_vector<int32_t>(), (std::vector<int32_t>{-1, -1, 0, 1, 1, 1, 1}));
  EXPECT_EQ(run_op(Op::Relu, {x}).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 9, 65536, 46341, 123456789}));
  // 65536^2 = 2^32 wraps to 0; 46341^2 = 2147488281 wraps to -2147479015; 123456789^2 needs
  // more than 53 bits, so a double product would lose its low bits.
  EXPECT_EQ(run_op(Op::Square, {x}).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 25, 0, 81, 0, -2147479015, static_cast<int32_t>(123456789u * 123456789u)}));
}

TEST(InterpElementwise, F32ResultsAreRoundedAfterEveryOp) {
  // 2^24 + 1 is not a float: the f32 sum rounds back to 2^24.
  EXPECT_EQ(run_op(Op::Add, {f32({16777216.0f}), f32({1.0f})}).to_vector<float>()[0], 16777216.0f);
  // Computed in double, then rounded once to float.
  float a = 0.1f, b = 3.3f;
  EXPECT_EQ(run_op(Op::Mul, {f32({a}), f32({b})}).to_vector<float>()[0],
            static_cast<float>(static_cast<double>(a) * static_cast<double>(b)));
  EXPECT_EQ(run_op(Op::Exp, {f32({a})}).to_vector<float>()[0], static_cast<float>(std::exp(static_cast<double>(a))));
  // A chain rounds at each step: (x*3)/3 rounds the product to float before dividing.
  ir::Region r;
  ValueId x = r.add_param({DType::f32, {1}});
  ValueId three = constant(r, {DType::f32, {1}}, {3});
  ValueId y = op(r, Op::Div, {op(r, Op::Mul, {x, three}), three});
  float want = static_cast<float>(static_cast<double>(static_cast<float>(static_cast<double>(a) * 3.0)) / 3.0);
  EXPECT_EQ(run(std::move(r), {y}, {f32({a})})[0].to_vector<float>()[0], want);
}

TEST(InterpElementwise, BinaryFloatOps) {
  Array a = f64({1, kNaN, 2, -8, 1});
  Array b = f64({kNaN, 3, 5, 2, 0});
  expect_same(run_op(Op::Max, {a, b}).to_doubles(), {kNaN, kNaN, 5, 2, 1}, "max propagates NaN");
  expect_same(run_op(Op::Min, {a, b}).to_doubles(), {kNaN, kNaN, 2, -8, 0}, "min propagates NaN");
  expect_same(run_op(Op::Add, {a, b}).to_doubles(), {kNaN, kNaN, 7, -6, 1}, "add");
  expect_same(run_op(Op::Sub, {a, b}).to_doubles(), {kNaN, kNaN, -3, -10, 1}, "sub");
  expect_same(run_op(Op::Div, {a, b}).to_doubles(), {kNaN, kNaN, 0.4, -4, kInf}, "float div");
  expect_same(run_op(Op::Pow, {f64({2, -8, 4, 0}), f64({10, 1.0 / 3, 0.5, 0})}).to_doubles(), {1024, kNaN, 2, 1},
              "pow as std::pow");
  expect_near(run_op(Op::Atan2, {f64({1, 0, -1}), f64({-1, 1, 0})}).to_doubles(),
              {3 * std::numbers::pi / 4, 0, -std::numbers::pi / 2}, 1e-15, "atan2(y, x)");
}

TEST(InterpElementwise, I32BinaryOps) {
  Array a = i32({-7, 7, INT_MIN, 5, 0, INT_MAX});
  Array b = i32({2, -2, -1, 0, -3, -1});
  // Division truncates toward zero; INT_MIN / -1 wraps; x / 0 = 0.
  EXPECT_EQ(run_op(Op::Div, {a, b}).to_vector<int32_t>(), (std::vector<int32_t>{-3, -3, INT_MIN, 0, 0, -INT_MAX}));
  EXPECT_EQ(run_op(Op::Max, {a, b}).to_vector<int32_t>(), (std::vector<int32_t>{2, 7, -1, 5, 0, INT_MAX}));
  EXPECT_EQ(run_op(Op::Min, {a, b}).to_vector<int32_t>(), (std::vector<int32_t>{-7, -2, INT_MIN, 0, -3, -1}));
  EXPECT_EQ(run_op(Op::Sub, {a, b}).to_vector<int32_t>(), (std::vector<int32_t>{-9, 9, INT_MIN + 1, 5, 3, INT_MIN}));
  EXPECT_EQ(run_op(Op::Mul, {a, b}).to_vector<int32_t>(), (std::vector<int32_t>{-14, -14, INT_MIN, 0, 0, -INT_MAX}));
}

TEST(InterpElementwise, ComparisonsLogicAndSelect) {
  Array a = f64({1, 2, kNaN, 3});
  Array b = f64({2, 2, 1, kNaN});
  auto cmp = [&](Op o) { return run_op(o, {a, b}).to_vector<bool>(); };
  EXPECT_EQ(run_op(Op::Eq, {a, b}).dtype(), DType::boolean);
  EXPECT_EQ(cmp(Op::Eq), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(cmp(Op::Ne), (std::vector<bool>{true, false, true, true}));
  EXPECT_EQ(cmp(Op::Lt), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(cmp(Op::Le), (std::vector<bool>{true, true, false, false}));
  EXPECT_EQ(cmp(Op::Gt), (std::vector<bool>{false, false, false, false}));
  EXPECT_EQ(cmp(Op::Ge), (std::vector<bool>{false, true, false, false}));
  EXPECT_EQ(run_op(Op::Lt, {i32({-1, 5}), i32({0, 5})}).to_vector<bool>(), (std::vector<bool>{true, false}));

  Array p = boolean({true, true, false, false});
  Array q = boolean({true, false, true, false});
  EXPECT_EQ(run_op(Op::And, {p, q}).to_vector<bool>(), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ(run_op(Op::Or, {p, q}).to_vector<bool>(), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(run_op(Op::Eq, {p, q}).to_vector<bool>(), (std::vector<bool>{true, false, false, true}));

  EXPECT_EQ(run_op(Op::Select, {p, i32({1, 2, 3, 4}), i32({10, 20, 30, 40})}).to_vector<int32_t>(),
            (std::vector<int32_t>{1, 2, 30, 40}));
  expect_same(run_op(Op::Select, {q, a, b}).to_doubles(), {1, 2, kNaN, kNaN}, "select f64");
}

TEST(InterpElementwise, ConvertBetweenEveryDTypeFamily) {
  auto convert = [](const Array& x, DType to) { return run_op(Op::Convert, {x}, {}, {{to, x.shape()}}); };
  // f32 -> i32 truncates toward zero and saturates; NaN -> 0.
  EXPECT_EQ(convert(f32({-0.5f, 2.99f, -2.99f, 3e9f, -3e9f, std::nanf("")}), DType::i32).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 2, -2, INT_MAX, INT_MIN, 0}));
  // i32 -> f32 rounds: 2^24 + 1 is not a float.
  EXPECT_EQ(convert(i32({16777217, -3}), DType::f32).to_vector<float>(), (std::vector<float>{16777216.0f, -3.0f}));
  // f64 -> f32 rounds to nearest.
  EXPECT_EQ(convert(f64({0.1}), DType::f32).to_vector<float>()[0], 0.1f);
  // To bool: x != 0 (NaN is != 0).
  EXPECT_EQ(convert(f64({0, -0.0, 0.5, kNaN}), DType::boolean).to_vector<bool>(),
            (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(convert(i32({0, -7}), DType::boolean).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(convert(boolean({true, false}), DType::i32).to_vector<int32_t>(), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(convert(boolean({true, false}), DType::f64).to_vector<double>(), (std::vector<double>{1, 0}));
}

TEST(InterpElementwise, ConstantAndIota) {
  ir::Region r;
  ValueId splat = constant(r, {DType::f32, {2, 2}}, {0.1});
  ValueId full = constant(r, {DType::i32, {3}}, {4, -5, 6});
  ValueId scalar = constant(r, {DType::boolean, {}}, {2});
  ValueId iota1 = op(r, Op::Iota, {}, axes({1}), {{DType::i32, {2, 3}}});
  ValueId iota0 = op(r, Op::Iota, {}, axes({0}), {{DType::f32, {2, 3}}});
  auto out = run(std::move(r), {splat, full, scalar, iota1, iota0}, {});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{0.1f, 0.1f, 0.1f, 0.1f}));
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(out[1].to_vector<int32_t>(), (std::vector<int32_t>{4, -5, 6}));
  EXPECT_EQ(out[2].to_vector<bool>(), (std::vector<bool>{true}));
  EXPECT_EQ(out[3].to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(out[4].to_vector<float>(), (std::vector<float>{0, 0, 0, 1, 1, 1}));
}
