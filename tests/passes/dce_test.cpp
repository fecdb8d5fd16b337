// Dead-code elimination: unused nodes go, at every depth; live programs and region signatures stay.
#include "pass_test.h"

using namespace pass_test;

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

TEST(Dce, RemovesADeadLoopWholeAndCleansBothBranchesOfALiveCond) {
  expect_pass(passes::eliminate_dead_code,
              "func @main(%0: f32[], %1: bool[]) -> (f32[]) {\n"
              "  %2 = while %0 {carries=1} : f32[]\n"
              "    cond(%0: f32[]) {\n"
              "      %1 = constant {data=[1]} : f32[]\n"
              "      %2 = lt %0, %1 : bool[]\n"
              "      yield %2\n"
              "    }\n"
              "    body(%0: f32[]) {\n"
              "      %1 = add %0, %0 : f32[]\n"
              "      yield %1\n"
              "    }\n"
              "  %3 = cond %1, %0 : f32[]\n"
              "    then(%0: f32[]) {\n"
              "      %1 = exp %0 : f32[]\n"
              "      %2 = neg %0 : f32[]\n"
              "      yield %2\n"
              "    }\n"
              "    else(%0: f32[]) {\n"
              "      %1 = tanh %0 : f32[]\n"
              "      yield %0\n"
              "    }\n"
              "  return %3\n"
              "}\n",
              "func @main(%0: f32[], %1: bool[]) -> (f32[]) {\n"
              "  %2 = cond %1, %0 : f32[]\n"
              "    then(%0: f32[]) {\n"
              "      %1 = neg %0 : f32[]\n"
              "      yield %1\n"
              "    }\n"
              "    else(%0: f32[]) {\n"
              "      yield %0\n"
              "    }\n"
              "  return %2\n"
              "}\n");
}

TEST(Dce, RemovesDeadChainsAndRandomOps) {
  // Random ops are pure functions of their key, so an unused draw is dead like anything else.
  expect_pass(passes::eliminate_dead_code,
              "func @main(%0: i32[2], %1: f32[3]) -> (f32[3]) {\n"
              "  %2 = rng_uniform %0 : f32[3]\n"
              "  %3 = exp %2 : f32[3]\n"
              "  %4 = mul %3, %3 : f32[3]\n"
              "  return %1\n"
              "}\n",
              "func @main(%0: i32[2], %1: f32[3]) -> (f32[3]) {\n"
              "  return %1\n"
              "}\n");
}

TEST(Dce, LeavesALiveProgramAlone) {
  const std::string live = "func @main(%0: f32[2]) -> (f32[2]) {\n  %1 = exp %0 : f32[2]\n  return %1\n}\n";
  expect_pass(passes::eliminate_dead_code, live, live, false);
}
