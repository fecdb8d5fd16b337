// The interpreter run directly on IR text: its input checks, integer semantics that the DSL
// tests cannot reach easily, evaluate() on single nodes, and run-time loop checks.
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <string>

#include "eval/interpreter.h"
#include "fluxion/error.h"
#include "ir/ir.h"

namespace fx = fluxion;
namespace ir = fluxion::ir;

namespace {

std::vector<fx::Array> run(const std::string& text, const std::vector<fx::Array>& in) {
  return fx::eval::run(ir::parse(text), in);
}

const std::string kI32Ops =
    "func @main(%0: i32[4], %1: i32[4]) -> (i32[4], i32[4], i32[4], i32[4]) {\n"
    "  %2 = add %0, %1 : i32[4]\n"
    "  %3 = mul %0, %1 : i32[4]\n"
    "  %4 = div %0, %1 : i32[4]\n"
    "  %5 = sub %0, %1 : i32[4]\n"
    "  return %2, %3, %4, %5\n"
    "}\n";

}  // namespace

TEST(Interp, I32ArithmeticWrapsAndDivisionIsTotal) {
  fx::Array a(std::vector<int32_t>{INT_MAX, 7, -7, INT_MIN}, {4});
  fx::Array b(std::vector<int32_t>{1, 2, 2, 0}, {4});
  auto r = run(kI32Ops, {a, b});
  EXPECT_EQ(r[0].to_vector<int32_t>(), (std::vector<int32_t>{INT_MIN, 9, -5, INT_MIN}));
  EXPECT_EQ(r[1].to_vector<int32_t>(), (std::vector<int32_t>{INT_MAX, 14, -14, 0}));
  EXPECT_EQ(r[2].to_vector<int32_t>(), (std::vector<int32_t>{INT_MAX, 3, -3, 0}));  // truncation, x/0 = 0
  EXPECT_EQ(r[3].to_vector<int32_t>(), (std::vector<int32_t>{INT_MAX - 1, 5, -9, INT_MIN}));
  // A product whose exact value needs more than 53 bits still wraps correctly.
  fx::Array big(std::vector<int32_t>{INT_MAX, INT_MAX, 123456789, -987654321}, {4});
  EXPECT_EQ(run(kI32Ops, {big, big})[1].to_vector<int32_t>(),
            (std::vector<int32_t>{1, 1, static_cast<int32_t>(123456789u * 123456789u),
                                  static_cast<int32_t>(987654321u * 987654321u)}));
}

TEST(Interp, ConvertTruncatesSaturatesAndMapsNaNToZero) {
  auto r = run(
      "func @main(%0: f64[6]) -> (i32[6], bool[6], f32[6]) {\n"
      "  %1 = convert %0 : i32[6]\n"
      "  %2 = convert %0 : bool[6]\n"
      "  %3 = convert %0 : f32[6]\n"
      "  return %1, %2, %3\n"
      "}\n",
      {fx::Array(std::vector<double>{-2.7, 2.7, 1e20, -1e20, std::nan(""), 0.1}, {6})});
  EXPECT_EQ(r[0].to_vector<int32_t>(), (std::vector<int32_t>{-2, 2, INT_MAX, INT_MIN, 0, 0}));
  EXPECT_EQ(r[1].to_vector<bool>(), (std::vector<bool>{true, true, true, true, true, true}));
  EXPECT_EQ(r[2].to_vector<float>()[5], 0.1f);
}

TEST(Interp, RejectsInputsThatDoNotMatchTheParameters) {
  const std::string text = "func @main(%0: f32[2]) -> (f32[2]) {\n  %1 = exp %0 : f32[2]\n  return %1\n}\n";
  EXPECT_THROW(run(text, {}), fx::Error);
  try {
    run(text, {fx::Array(fx::DType::f64, {2})});
    ADD_FAILURE();
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 0 is f64[2], expected f32[2]"), std::string::npos) << e.what();
  }
}

TEST(Interp, EvaluateAppliesOneNode) {
  ir::Program p = ir::parse(
      "func @main(%0: f32[2,3]) -> (f32[3]) {\n  %1 = reduce_max %0 {axes=[0]} : f32[3]\n  return %1\n}\n");
  fx::Array x(std::vector<float>{1, 5, -2, 4, 0, -1}, {2, 3});
  auto out = fx::eval::evaluate(p.body.nodes[0], {x}, {fx::TensorType{fx::DType::f32, {3}}});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{4, 5, -1}));
}

TEST(Interp, WhileStopsAtItsBoundWithAnError) {
  const std::string text =
      "func @main(%0: i32[]) -> (i32[]) {\n"
      "  %1 = while %0 {carries=1, max_iters=3} : i32[]\n"
      "    cond(%0: i32[]) {\n"
      "      %1 = constant {data=[10]} : i32[]\n"
      "      %2 = lt %0, %1 : bool[]\n"
      "      yield %2\n"
      "    }\n"
      "    body(%0: i32[]) {\n"
      "      %1 = constant {data=[1]} : i32[]\n"
      "      %2 = add %0, %1 : i32[]\n"
      "      yield %2\n"
      "    }\n"
      "  return %1\n"
      "}\n";
  EXPECT_EQ(run(text, {fx::Array::scalar(int32_t{7})})[0].item(), 10);  // exactly 3 iterations
  EXPECT_THROW(run(text, {fx::Array::scalar(int32_t{6})}), fx::Error);
}

TEST(Interp, PadIsTheTransposeOfSlice) {
  // slice takes every 2nd element from 1; pad puts them back there.
  auto r = run(
      "func @main(%0: f32[6]) -> (f32[3], f32[7]) {\n"
      "  %1 = slice %0 {starts=[1], limits=[6], strides=[2]} : f32[3]\n"
      "  %2 = pad %1 {strides=[2], padding=[1,1]} : f32[7]\n"
      "  return %1, %2\n"
      "}\n",
      {fx::Array(std::vector<float>{1, 2, 3, 4, 5, 6}, {6})});
  EXPECT_EQ(r[0].to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(r[1].to_vector<float>(), (std::vector<float>{0, 2, 0, 4, 0, 6, 0}));
}
