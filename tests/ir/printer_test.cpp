// The printer: golden texts of hand-built and traced programs, canonical renumbering, every
// attribute field, region names, locations, and printing a region alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>

#include <fluxion/fluxion.h>

#include "ir/ir.h"
#include "programs.h"

using namespace ir_test;

namespace {

// Renames every value id v of `r` (not of nested regions) to types.size() - 1 - v, so ids run
// backwards against definition order.
void reverse_ids(ir::Region& r) {
  auto flip = [&](ir::ValueId& v) { v = static_cast<ir::ValueId>(r.types.size()) - 1 - v; };
  std::reverse(r.types.begin(), r.types.end());
  for (ir::ValueId& v : r.params) flip(v);
  for (ir::Node& n : r.nodes) {
    for (ir::ValueId& v : n.operands) flip(v);
    for (ir::ValueId& v : n.results) flip(v);
  }
  for (ir::ValueId& v : r.results) flip(v);
}

}  // namespace

TEST(IrPrinter, GoldenPrintOfAHandBuiltProgram) { EXPECT_EQ(ir::print(hand_built()), kHandBuiltText); }

TEST(IrPrinter, NumberingDependsOnDefinitionOrderNotOnIds) {
  ir::Program p = hand_built();
  reverse_ids(p.body);
  ir::verify(p);
  EXPECT_EQ(p.body.params[0], 6);  // the ids really did change
  EXPECT_EQ(ir::print(p), kHandBuiltText);
}

TEST(IrPrinter, EveryAttributeFieldInDeclarationOrder) {
  // The constant's rule reads only `data`; the other fields are set to show their spelling and
  // order (Attrs' declaration order), and fields at their default are left out.
  ir::Program p;
  ir::Attrs a;
  a.axes = {0, -1};
  a.perm = {1, 0};
  a.starts = {2};
  a.limits = {3};
  a.strides = {4};
  a.window = {5, 6};
  a.padding = {0, 1, 2, 3};
  a.dilation = {7};
  a.groups = 2;
  a.length = 3;
  a.carries = 1;
  a.xs = 2;
  a.max_iters = 0;
  a.reverse = true;
  a.data = {-0.0, 0.1, 1e300, 1e-300, std::numeric_limits<double>::infinity(),
            -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
  p.body.results = {p.body.add(ir::Op::Constant, {}, a, {{fx::DType::f64, {7}}})[0]};
  ir::Attrs just_data;
  just_data.data = {1};
  p.body.add(ir::Op::Constant, {}, just_data, {f32({})});
  const std::string text =
      "func @main() -> (f64[7]) {\n"
      "  %0 = constant {axes=[0,-1], perm=[1,0], starts=[2], limits=[3], strides=[4], window=[5,6], "
      "padding=[0,1,2,3], dilation=[7], groups=2, length=3, carries=1, xs=2, max_iters=0, reverse=true, "
      "data=[-0,0.1,1e+300,1e-300,inf,-inf,nan]} : f64[7]\n"
      "  %1 = constant {data=[1]} : f32[]\n"
      "  return %0\n"
      "}\n";
  EXPECT_EQ(ir::print(p), text);
  EXPECT_EQ(ir::print(ir::parse(text)), text);
}

TEST(IrPrinter, RegionNamesOfWhileAndCond) {
  const std::string text =
      "func @main(%0: f32[], %1: bool[]) -> (f32[], f32[]) {\n"
      "  %2 = while %0 {carries=1, max_iters=100} : f32[]\n"
      "    cond(%0: f32[]) {\n"
      "      %1 = constant {data=[10]} : f32[]\n"
      "      %2 = lt %0, %1 : bool[]\n"
      "      yield %2\n"
      "    }\n"
      "    body(%0: f32[]) {\n"
      "      %1 = add %0, %0 : f32[]\n"
      "      yield %1\n"
      "    }\n"
      "  %3 = cond %1, %2 : f32[]\n"
      "    then(%0: f32[]) {\n"
      "      yield %0\n"
      "    }\n"
      "    else(%0: f32[]) {\n"
      "      %1 = neg %0 : f32[]\n"
      "      yield %1\n"
      "    }\n"
      "  return %2, %3\n"
      "}\n";
  ir::Program p = ir::parse(text);
  ASSERT_EQ(p.body.nodes.size(), 2u);
  EXPECT_EQ(p.body.nodes[0].regions.size(), 2u);
  EXPECT_EQ(p.body.nodes[1].regions[1].nodes.size(), 1u);
  EXPECT_EQ(ir::print(p), text);
}

TEST(IrPrinter, GoldenPrintOfATracedLoopWithCaptures) {
  std::string text = fx::jit([](fx::Tensor x) {
                       // One op per statement: C++ leaves the order of an operator's operands unspecified.
                       return fx::fori_loop(1, 4, [&](fx::Tensor i, fx::Tensor s) {
                         fx::Tensor sx = s * x;
                         return sx + fx::cast(i, fx::f32);
                       }, x);
                     }).lower(fx::Array(fx::DType::f32, {2})).traced_ir();
  EXPECT_EQ(text,
            "func @main(%0: f32[2]) -> (f32[2]) {\n"
            "  %1 = scan %0, %0 {length=3, carries=1} : f32[2]\n"
            "    body(%0: i32[], %1: f32[2], %2: f32[2]) {\n"
            "      %3 = constant {data=[1]} : i32[]\n"
            "      %4 = add %0, %3 : i32[]\n"
            "      %5 = mul %1, %2 : f32[2]\n"
            "      %6 = convert %4 : f32[]\n"
            "      %7 = broadcast %6 : f32[2]\n"
            "      %8 = add %5, %7 : f32[2]\n"
            "      yield %8\n"
            "    }\n"
            "  return %1\n"
            "}\n");
}

TEST(IrPrinter, LocationsOnlyWhenAskedAndOnlyWhereKnown) {
  ir::Program p = hand_built();
  p.body.nodes[1].file = "model.cpp";
  p.body.nodes[1].line = 12;
  EXPECT_EQ(ir::print(p), kHandBuiltText);
  std::string with = ir::print(p, true);
  EXPECT_NE(with.find("  %3 = add %0, %2 : f32[2,3]  // model.cpp:12\n"), std::string::npos) << with;
  EXPECT_EQ(with.find("broadcast %1 : f32[2,3]  //"), std::string::npos) << with;  // line 0: unknown
  EXPECT_EQ(ir::print(ir::parse(with)), kHandBuiltText);  // the parser skips the comments
}

TEST(IrPrinter, PrintsARegionAlone) {
  ir::Program p = ir::parse(
      "func @main(%0: f32[]) -> (f32[]) {\n"
      "  %1 = scan %0 {length=2, carries=1} : f32[]\n"
      "    body(%0: i32[], %1: f32[]) {\n"
      "      %2 = exp %1 : f32[]\n"
      "      yield %2\n"
      "    }\n"
      "  return %1\n"
      "}\n");
  EXPECT_EQ(ir::print(p.body.nodes[0].regions[0]),
            "region(%0: i32[], %1: f32[]) {\n"
            "  %2 = exp %1 : f32[]\n"
            "  yield %2\n"
            "}\n");
}

TEST(IrPrinter, ShowsBrokenIrInsteadOfThrowing) {
  // Error messages print IR that failed verification; undefined ids show as %?<raw id>.
  ir::Program p = hand_built();
  p.body.nodes[1].operands[1] = 99;
  p.body.results = {42};
  std::string text;
  ASSERT_NO_THROW(text = ir::print(p));
  EXPECT_NE(text.find("%3 = add %0, %?99 : f32[2,3]"), std::string::npos) << text;
  EXPECT_NE(text.find("-> (?)"), std::string::npos) << text;
  EXPECT_NE(text.find("return %?42"), std::string::npos) << text;
}

TEST(IrPrinter, ANodeWithoutResults) {
  // A cond whose branches yield nothing (DCE removes it, but a traced program may have one).
  ir::Program p;
  ir::ValueId pred = p.body.add_param({fx::DType::boolean, {}});
  ir::Region branch;
  std::vector<ir::Region> branches{branch, branch};
  EXPECT_TRUE(p.body.add(ir::Op::Cond, {pred}, {}, {}, branches).empty());
  const std::string text =
      "func @main(%0: bool[]) -> () {\n"
      "  = cond %0 :\n"
      "    then() {\n"
      "      yield\n"
      "    }\n"
      "    else() {\n"
      "      yield\n"
      "    }\n"
      "  return\n"
      "}\n";
  EXPECT_EQ(ir::print(p), text);
  EXPECT_EQ(ir::print(ir::parse(text)), text);
}
