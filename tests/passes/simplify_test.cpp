// Each simplification pass on small printed programs: the input text, the pass, the expected
// text.
#include <gtest/gtest.h>

#include <string>

#include "jit/ir/ir.h"
#include "jit/passes/passes.h"

namespace ir = fluxion::ir;
namespace passes = fluxion::passes;

namespace {

// Parses `in`, applies `pass` to the body, checks the printed result is `want` and verifies it.
template <class Pass>
void expect_pass(Pass pass, const std::string& in, const std::string& want, bool changes = true) {
  ir::Program p = ir::parse(in);
  EXPECT_EQ(pass(p.body), changes);
  EXPECT_EQ(ir::print(p), want);
  ir::verify(p);
}

}  // namespace

TEST(Dce, RemovesUnusedNodesInsideRegionsToo) {
  expect_pass(passes::eliminate_dead_code,
              "func @main(%0: f32[2]) -> (f32[2]) {\n"
              "  %1 = exp %0 : f32[2]\n"
              "  %2 = log %0 : f32[2]\n"
              "  %3 = scan %0 {length=2, carries=1} : f32[2]\n"
              "    body(%0: i32[], %1: f32[2]) {\n"
              "      %2 = sin %1 : f32[2]\n"
              "      %3 = cos %1 : f32[2]\n"
              "      yield %3\n"
              "    }\n"
              "  %4 = add %2, %3 : f32[2]\n"
              "  return %4\n"
              "}\n",
              "func @main(%0: f32[2]) -> (f32[2]) {\n"
              "  %1 = log %0 : f32[2]\n"
              "  %2 = scan %0 {length=2, carries=1} : f32[2]\n"
              "    body(%0: i32[], %1: f32[2]) {\n"
              "      %2 = cos %1 : f32[2]\n"
              "      yield %2\n"
              "    }\n"
              "  %3 = add %1, %2 : f32[2]\n"
              "  return %3\n"
              "}\n");
}

TEST(Dce, LeavesALiveProgramAlone) {
  const std::string live = "func @main(%0: f32[2]) -> (f32[2]) {\n  %1 = exp %0 : f32[2]\n  return %1\n}\n";
  expect_pass(passes::eliminate_dead_code, live, live, false);
}

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

TEST(Cse, ComparesRegionsAndWorksInsideThem) {
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

TEST(ConstantFold, LeavesLargeResultsAndRegionsAlone) {
  const std::string large =
      "func @main() -> (f32[2000]) {\n"
      "  %0 = constant {data=[1]} : f32[2000]\n"
      "  %1 = exp %0 : f32[2000]\n"
      "  return %1\n"
      "}\n";
  expect_pass(passes::fold_constants, large, large, false);
}

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
