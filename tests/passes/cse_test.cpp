// Common-subexpression elimination: equal nodes merge into the first, uses are rewritten
// (operands and region results), and "equal" means equal text: op, operands, attributes
// (constants bit for bit), result types and regions.
#include "pass_test.h"

using namespace pass_test;

TEST(Cse, MergesEqualNodesAndRewritesTheirUses) {
  expect_pass(passes::eliminate_common_subexpressions,
              "func @main(%0: f32[2], %1: f32[2]) -> (f32[2], f32[2]) {\n"
              "  %2 = mul %0, %1 : f32[2]\n"
              "  %3 = mul %0, %1 : f32[2]\n"
              "  %4 = mul %1, %0 : f32[2]\n"
              "  %5 = add %2, %3 : f32[2]\n"
              "  %6 = reduce_sum %5 {axes=[0]} : f32[]\n"
              "  %7 = constant {data=[2]} : f32[]\n"
              "  %8 = constant {data=[2]} : f32[]\n"
              "  %9 = constant {data=[2]} : f64[]\n"
              "  %10 = add %7, %8 : f32[]\n"
              "  return %5, %4\n"
              "}\n",
              "func @main(%0: f32[2], %1: f32[2]) -> (f32[2], f32[2]) {\n"
              "  %2 = mul %0, %1 : f32[2]\n"
              "  %3 = mul %1, %0 : f32[2]\n"
              "  %4 = add %2, %2 : f32[2]\n"
              "  %5 = reduce_sum %4 {axes=[0]} : f32[]\n"
              "  %6 = constant {data=[2]} : f32[]\n"
              "  %7 = constant {data=[2]} : f64[]\n"
              "  %8 = add %6, %6 : f32[]\n"
              "  return %4, %3\n"
              "}\n");
}

TEST(Cse, ConstantsAreEqualBitForBit) {
  // 0 and -0 compare == but are different constants; nan compares != itself but is one constant.
  expect_pass(passes::eliminate_common_subexpressions,
              "func @main() -> (f32[], f32[], f32[], f32[], f32[2], f32[2]) {\n"
              "  %0 = constant {data=[0]} : f32[]\n"
              "  %1 = constant {data=[-0]} : f32[]\n"
              "  %2 = constant {data=[nan]} : f32[]\n"
              "  %3 = constant {data=[nan]} : f32[]\n"
              "  %4 = constant {data=[1,-0]} : f32[2]\n"
              "  %5 = constant {data=[1,0]} : f32[2]\n"
              "  return %0, %1, %2, %3, %4, %5\n"
              "}\n",
              "func @main() -> (f32[], f32[], f32[], f32[], f32[2], f32[2]) {\n"
              "  %0 = constant {data=[0]} : f32[]\n"
              "  %1 = constant {data=[-0]} : f32[]\n"
              "  %2 = constant {data=[nan]} : f32[]\n"
              "  %3 = constant {data=[1,-0]} : f32[2]\n"
              "  %4 = constant {data=[1,0]} : f32[2]\n"
              "  return %0, %1, %2, %2, %3, %4\n"
              "}\n");
}

TEST(Cse, DifferentAttributesOrResultTypesStayApartRandomOpsMerge) {
  expect_pass(passes::eliminate_common_subexpressions,
              "func @main(%0: f32[2,2], %1: i32[2]) -> (f32[2], f32[2], f32[4], f32[2,2], f32[3], f32[3]) {\n"
              "  %2 = reduce_sum %0 {axes=[0]} : f32[2]\n"
              "  %3 = reduce_sum %0 {axes=[1]} : f32[2]\n"
              "  %4 = reshape %0 : f32[4]\n"
              "  %5 = reshape %0 : f32[2,2]\n"
              "  %6 = rng_normal %1 : f32[3]\n"
              "  %7 = rng_normal %1 : f32[3]\n"
              "  return %2, %3, %4, %5, %6, %7\n"
              "}\n",
              "func @main(%0: f32[2,2], %1: i32[2]) -> (f32[2], f32[2], f32[4], f32[2,2], f32[3], f32[3]) {\n"
              "  %2 = reduce_sum %0 {axes=[0]} : f32[2]\n"
              "  %3 = reduce_sum %0 {axes=[1]} : f32[2]\n"
              "  %4 = reshape %0 : f32[4]\n"
              "  %5 = reshape %0 : f32[2,2]\n"
              "  %6 = rng_normal %1 : f32[3]\n"
              "  return %2, %3, %4, %5, %6, %6\n"
              "}\n");
}

TEST(Cse, ComparesRegionsAndWorksInsideThem) {
  // Inside the first loop the two exps merge (and the yield reads the survivor); the loop then
  // equals the second and absorbs it; the third differs in its length.
  expect_pass(passes::eliminate_common_subexpressions,
              "func @main(%0: f32[]) -> (f32[], f32[], f32[]) {\n"
              "  %1 = scan %0 {length=3, carries=1} : f32[]\n"
              "    body(%0: i32[], %1: f32[]) {\n"
              "      %2 = exp %1 : f32[]\n"
              "      %3 = exp %1 : f32[]\n"
              "      %4 = add %2, %3 : f32[]\n"
              "      yield %4\n"
              "    }\n"
              "  %2 = scan %0 {length=3, carries=1} : f32[]\n"
              "    body(%0: i32[], %1: f32[]) {\n"
              "      %2 = exp %1 : f32[]\n"
              "      %3 = add %2, %2 : f32[]\n"
              "      yield %3\n"
              "    }\n"
              "  %3 = scan %0 {length=4, carries=1} : f32[]\n"
              "    body(%0: i32[], %1: f32[]) {\n"
              "      %2 = exp %1 : f32[]\n"
              "      %3 = add %2, %2 : f32[]\n"
              "      yield %3\n"
              "    }\n"
              "  return %1, %2, %3\n"
              "}\n",
              "func @main(%0: f32[]) -> (f32[], f32[], f32[]) {\n"
              "  %1 = scan %0 {length=3, carries=1} : f32[]\n"
              "    body(%0: i32[], %1: f32[]) {\n"
              "      %2 = exp %1 : f32[]\n"
              "      %3 = add %2, %2 : f32[]\n"
              "      yield %3\n"
              "    }\n"
              "  %2 = scan %0 {length=4, carries=1} : f32[]\n"
              "    body(%0: i32[], %1: f32[]) {\n"
              "      %2 = exp %1 : f32[]\n"
              "      %3 = add %2, %2 : f32[]\n"
              "      yield %3\n"
              "    }\n"
              "  return %1, %1, %2\n"
              "}\n");
}

TEST(Cse, YieldOfAMergedValueIsRewritten) {
  expect_pass(passes::eliminate_common_subexpressions,
              "func @main(%0: f32[], %1: bool[]) -> (f32[], f32[]) {\n"
              "  %2, %3 = cond %1, %0 : f32[], f32[]\n"
              "    then(%0: f32[]) {\n"
              "      %1 = sin %0 : f32[]\n"
              "      %2 = sin %0 : f32[]\n"
              "      yield %1, %2\n"
              "    }\n"
              "    else(%0: f32[]) {\n"
              "      yield %0, %0\n"
              "    }\n"
              "  return %2, %3\n"
              "}\n",
              "func @main(%0: f32[], %1: bool[]) -> (f32[], f32[]) {\n"
              "  %2, %3 = cond %1, %0 : f32[], f32[]\n"
              "    then(%0: f32[]) {\n"
              "      %1 = sin %0 : f32[]\n"
              "      yield %1, %1\n"
              "    }\n"
              "    else(%0: f32[]) {\n"
              "      yield %0, %0\n"
              "    }\n"
              "  return %2, %3\n"
              "}\n");
}
