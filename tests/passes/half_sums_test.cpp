// sum_halves_in_f32: every sum over f16 or bf16 operands reads them converted to f32 and converts
// its result back; exact reductions and f32 sums are kept.
#include "pass_test.h"

using namespace pass_test;

TEST(HalfSums, ReductionsAndProductsOfHalvesSumInF32) {
  expect_pass(passes::sum_halves_in_f32,
              "func @main(%0: bf16[4,8], %1: f16[8,3], %2: f16[4,8]) -> (bf16[4], f16[4,3]) {\n"
              "  %3 = reduce_sum %0 {axes=[1]} : bf16[4]\n"
              "  %4 = matmul %2, %1 : f16[4,3]\n"
              "  return %3, %4\n"
              "}\n",
              "func @main(%0: bf16[4,8], %1: f16[8,3], %2: f16[4,8]) -> (bf16[4], f16[4,3]) {\n"
              "  %3 = convert %0 : f32[4,8]\n"
              "  %4 = reduce_sum %3 {axes=[1]} : f32[4]\n"
              "  %5 = convert %4 : bf16[4]\n"
              "  %6 = convert %2 : f32[4,8]\n"
              "  %7 = convert %1 : f32[8,3]\n"
              "  %8 = matmul %6, %7 : f32[4,3]\n"
              "  %9 = convert %8 : f16[4,3]\n"
              "  return %5, %9\n"
              "}\n");
}

TEST(HalfSums, ExactReductionsAndWiderSumsAreKept) {
  const std::string kept =
      "func @main(%0: bf16[4,8], %1: f32[4,8]) -> (bf16[4], f32[4]) {\n"
      "  %2 = reduce_max %0 {axes=[1]} : bf16[4]\n"
      "  %3 = reduce_sum %1 {axes=[1]} : f32[4]\n"
      "  return %2, %3\n"
      "}\n";
  expect_pass(passes::sum_halves_in_f32, kept, kept, false);
}

TEST(HalfSums, SumsInLoopBodiesAreRewrittenToo) {
  expect_pass(passes::sum_halves_in_f32,
              "func @main(%0: f16[8]) -> (f16[8]) {\n"
              "  %1 = scan %0 {length=3, carries=1} : f16[8]\n"
              "    body(%0: i32[], %1: f16[8]) {\n"
              "      %2 = reduce_sum %1 {axes=[0]} : f16[]\n"
              "      %3 = broadcast %2 : f16[8]\n"
              "      yield %3\n"
              "    }\n"
              "  return %1\n"
              "}\n",
              "func @main(%0: f16[8]) -> (f16[8]) {\n"
              "  %1 = scan %0 {length=3, carries=1} : f16[8]\n"
              "    body(%0: i32[], %1: f16[8]) {\n"
              "      %2 = convert %1 : f32[8]\n"
              "      %3 = reduce_sum %2 {axes=[0]} : f32[]\n"
              "      %4 = convert %3 : f16[]\n"
              "      %5 = broadcast %4 : f16[8]\n"
              "      yield %5\n"
              "    }\n"
              "  return %1\n"
              "}\n");
}

TEST(HalfSums, OperandsReadThroughViewsAreConvertedBelowThem) {
  // A backward product reads the transpose of what the forward product reads: both read one
  // conversion after CSE, and the broadcast grows the converted value.
  expect_pass(passes::sum_halves_in_f32,
              "func @main(%0: bf16[4,8], %1: bf16[8,3], %2: bf16[8]) -> (bf16[4,3], bf16[8,3], bf16[]) {\n"
              "  %3 = matmul %0, %1 : bf16[4,3]\n"
              "  %4 = transpose %0 {perm=[1,0]} : bf16[8,4]\n"
              "  %5 = matmul %4, %3 : bf16[8,3]\n"
              "  %6 = broadcast %2 : bf16[4,8]\n"
              "  %7 = reduce_sum %6 {axes=[0,1]} : bf16[]\n"
              "  return %3, %5, %7\n"
              "}\n",
              "func @main(%0: bf16[4,8], %1: bf16[8,3], %2: bf16[8]) -> (bf16[4,3], bf16[8,3], bf16[]) {\n"
              "  %3 = convert %0 : f32[4,8]\n"
              "  %4 = convert %1 : f32[8,3]\n"
              "  %5 = matmul %3, %4 : f32[4,3]\n"
              "  %6 = convert %5 : bf16[4,3]\n"
              "  %7 = transpose %0 {perm=[1,0]} : bf16[8,4]\n"
              "  %8 = convert %0 : f32[4,8]\n"
              "  %9 = transpose %8 {perm=[1,0]} : f32[8,4]\n"
              "  %10 = convert %6 : f32[4,3]\n"
              "  %11 = matmul %9, %10 : f32[8,3]\n"
              "  %12 = convert %11 : bf16[8,3]\n"
              "  %13 = broadcast %2 : bf16[4,8]\n"
              "  %14 = convert %2 : f32[8]\n"
              "  %15 = broadcast %14 : f32[4,8]\n"
              "  %16 = reduce_sum %15 {axes=[0,1]} : f32[]\n"
              "  %17 = convert %16 : bf16[]\n"
              "  return %6, %12, %17\n"
              "}\n");
}
