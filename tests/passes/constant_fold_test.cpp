// Constant folding: nodes of constants become constants computed by the interpreter (rounded
// to their dtype), splats stay splats, and large results, region ops and iota are left alone.
#include "pass_test.h"

using namespace pass_test;

TEST(ConstantFold, EvaluatesConstantSubgraphsWithTheInterpreter) {
  expect_pass(passes::fold_constants,
              "func @main(%0: f32[3]) -> (f32[3]) {\n"
              "  %1 = constant {data=[1,2,3]} : f32[3]\n"
              "  %2 = constant {data=[2]} : f32[3]\n"
              "  %3 = mul %1, %2 : f32[3]\n"
              "  %4 = exp %2 : f32[3]\n"
              "  %5 = reduce_sum %3 {axes=[0]} : f32[]\n"
              "  %6 = broadcast %5 : f32[3]\n"
              "  %7 = add %0, %6 : f32[3]\n"
              "  %8 = iota {axes=[0]} : i32[3]\n"
              "  return %7\n"
              "}\n",
              "func @main(%0: f32[3]) -> (f32[3]) {\n"
              "  %1 = constant {data=[1,2,3]} : f32[3]\n"
              "  %2 = constant {data=[2]} : f32[3]\n"
              "  %3 = constant {data=[2,4,6]} : f32[3]\n"
              "  %4 = constant {data=[7.389056205749512]} : f32[3]\n"
              "  %5 = constant {data=[12]} : f32[]\n"
              "  %6 = constant {data=[12]} : f32[3]\n"
              "  %7 = add %0, %6 : f32[3]\n"
              "  %8 = iota {axes=[0]} : i32[3]\n"
              "  return %7\n"
              "}\n");
}

TEST(ConstantFold, RoundsToTheResultDtypeAndKeepsTheSignOfZero) {
  // 0.1 as an f32 is 0.100000001490116...; a splat of [0,-0] is not a splat.
  expect_pass(passes::fold_constants,
              "func @main() -> (f64[2], f32[2], bool[2]) {\n"
              "  %0 = constant {data=[0.1]} : f32[2]\n"
              "  %1 = convert %0 : f64[2]\n"
              "  %2 = constant {data=[0,-0]} : f32[2]\n"
              "  %3 = neg %2 : f32[2]\n"
              "  %4 = eq %2, %3 : bool[2]\n"
              "  return %1, %3, %4\n"
              "}\n",
              "func @main() -> (f64[2], f32[2], bool[2]) {\n"
              "  %0 = constant {data=[0.1]} : f32[2]\n"
              "  %1 = constant {data=[0.10000000149011612]} : f64[2]\n"
              "  %2 = constant {data=[0,-0]} : f32[2]\n"
              "  %3 = constant {data=[-0,0]} : f32[2]\n"
              "  %4 = constant {data=[1]} : bool[2]\n"
              "  return %1, %3, %4\n"
              "}\n");
}

TEST(ConstantFold, FoldsInsideRegionsButNotRegionOpsOrParameters) {
  expect_pass(passes::fold_constants,
              "func @main() -> (f32[]) {\n"
              "  %0 = constant {data=[1]} : f32[]\n"
              "  %1 = scan %0 {length=2, carries=1} : f32[]\n"
              "    body(%0: i32[], %1: f32[]) {\n"
              "      %2 = constant {data=[2]} : f32[]\n"
              "      %3 = mul %2, %2 : f32[]\n"
              "      %4 = add %1, %3 : f32[]\n"
              "      yield %4\n"
              "    }\n"
              "  return %1\n"
              "}\n",
              "func @main() -> (f32[]) {\n"
              "  %0 = constant {data=[1]} : f32[]\n"
              "  %1 = scan %0 {length=2, carries=1} : f32[]\n"
              "    body(%0: i32[], %1: f32[]) {\n"
              "      %2 = constant {data=[2]} : f32[]\n"
              "      %3 = constant {data=[4]} : f32[]\n"
              "      %4 = add %1, %3 : f32[]\n"
              "      yield %4\n"
              "    }\n"
              "  return %1\n"
              "}\n");
}

TEST(ConstantFold, LeavesResultsOverTheLimitAlone) {
  const std::string large =
      "func @main() -> (f32[1025]) {\n"
      "  %0 = constant {data=[1]} : f32[1025]\n"
      "  %1 = exp %0 : f32[1025]\n"
      "  return %1\n"
      "}\n";
  expect_pass(passes::fold_constants, large, large, false);
  expect_pass(passes::fold_constants,
              "func @main() -> (f32[1024]) {\n"
              "  %0 = constant {data=[0]} : f32[1024]\n"
              "  %1 = exp %0 : f32[1024]\n"
              "  return %1\n"
              "}\n",
              "func @main() -> (f32[1024]) {\n"
              "  %0 = constant {data=[0]} : f32[1024]\n"
              "  %1 = constant {data=[1]} : f32[1024]\n"
              "  return %1\n"
              "}\n");
}
