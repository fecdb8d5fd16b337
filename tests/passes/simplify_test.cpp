// simplify: folding, CSE and DCE together, run until nothing changes.
#include "pass_test.h"

using namespace pass_test;

TEST(Simplify, ReachesAFixedPoint) {
  ir::Program p = ir::parse(
      "func @main(%0: f32[2]) -> (f32[2]) {\n"
      "  %1 = constant {data=[3]} : f32[2]\n"
      "  %2 = constant {data=[3]} : f32[2]\n"
      "  %3 = mul %1, %2 : f32[2]\n"
      "  %4 = mul %0, %3 : f32[2]\n"
      "  %5 = mul %0, %3 : f32[2]\n"
      "  %6 = add %4, %5 : f32[2]\n"
      "  %7 = sin %6 : f32[2]\n"
      "  return %6\n"
      "}\n");
  passes::simplify(p);
  EXPECT_EQ(ir::print(p),
            "func @main(%0: f32[2]) -> (f32[2]) {\n"
            "  %1 = constant {data=[9]} : f32[2]\n"
            "  %2 = mul %0, %1 : f32[2]\n"
            "  %3 = add %2, %2 : f32[2]\n"
            "  return %3\n"
            "}\n");
}

TEST(Simplify, NeedsSeveralRoundsWhenFoldingMakesLoopsEqual) {
  // Round 1 folds 2*3 in the first body and DCE drops the 2 and the 3; only then are the two
  // loops equal, and round 2 merges them.
  ir::Program p = ir::parse(
      "func @main(%0: f32[]) -> (f32[], f32[]) {\n"
      "  %1 = scan %0 {length=3, carries=1} : f32[]\n"
      "    body(%0: i32[], %1: f32[]) {\n"
      "      %2 = constant {data=[2]} : f32[]\n"
      "      %3 = constant {data=[3]} : f32[]\n"
      "      %4 = mul %2, %3 : f32[]\n"
      "      %5 = add %1, %4 : f32[]\n"
      "      yield %5\n"
      "    }\n"
      "  %2 = scan %0 {length=3, carries=1} : f32[]\n"
      "    body(%0: i32[], %1: f32[]) {\n"
      "      %2 = constant {data=[6]} : f32[]\n"
      "      %3 = add %1, %2 : f32[]\n"
      "      yield %3\n"
      "    }\n"
      "  return %1, %2\n"
      "}\n");
  passes::simplify(p);
  EXPECT_EQ(ir::print(p),
            "func @main(%0: f32[]) -> (f32[], f32[]) {\n"
            "  %1 = scan %0 {length=3, carries=1} : f32[]\n"
            "    body(%0: i32[], %1: f32[]) {\n"
            "      %2 = constant {data=[6]} : f32[]\n"
            "      %3 = add %1, %2 : f32[]\n"
            "      yield %3\n"
            "    }\n"
            "  return %1, %1\n"
            "}\n");
}

TEST(Simplify, RemovesStopGradients) {
  ir::Program p = ir::parse(
      "func @main(%0: f32[2]) -> (f32[2]) {\n"
      "  %1 = stop_gradient %0 : f32[2]\n"
      "  %2 = exp %1 : f32[2]\n"
      "  return %2\n"
      "}\n");
  passes::simplify(p);
  EXPECT_EQ(ir::print(p),
            "func @main(%0: f32[2]) -> (f32[2]) {\n"
            "  %1 = exp %0 : f32[2]\n"
            "  return %1\n"
            "}\n");
}
