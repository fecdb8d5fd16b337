// rewrite_transposed_products: transpose(a @ b) becomes transpose(b) @ transpose(a).
#include "pass_test.h"

using namespace pass_test;

TEST(TransposedProducts, ATransposedProductSwapsItsOperands) {
  expect_pass(passes::rewrite_transposed_products,
              "func @main(%0: f32[2,3], %1: f32[3,4]) -> (f32[4,2]) {\n"
              "  %2 = matmul %0, %1 : f32[2,4]\n"
              "  %3 = transpose %2 {perm=[1,0]} : f32[4,2]\n"
              "  return %3\n"
              "}\n",
              "func @main(%0: f32[2,3], %1: f32[3,4]) -> (f32[4,2]) {\n"
              "  %2 = matmul %0, %1 : f32[2,4]\n"
              "  %3 = transpose %1 {perm=[1,0]} : f32[4,3]\n"
              "  %4 = transpose %0 {perm=[1,0]} : f32[3,2]\n"
              "  %5 = matmul %3, %4 : f32[4,2]\n"
              "  return %5\n"
              "}\n");
}

TEST(TransposedProducts, ATransposedOperandIsReadDirectly) {
  // A dense layer's weight gradient: transpose(transpose(x) @ dy) is transpose(dy) @ x.
  expect_pass(passes::rewrite_transposed_products,
              "func @main(%0: f32[8,3], %1: f32[8,5]) -> (f32[5,3]) {\n"
              "  %2 = transpose %0 {perm=[1,0]} : f32[3,8]\n"
              "  %3 = matmul %2, %1 : f32[3,5]\n"
              "  %4 = transpose %3 {perm=[1,0]} : f32[5,3]\n"
              "  return %4\n"
              "}\n",
              "func @main(%0: f32[8,3], %1: f32[8,5]) -> (f32[5,3]) {\n"
              "  %2 = transpose %0 {perm=[1,0]} : f32[3,8]\n"
              "  %3 = matmul %2, %1 : f32[3,5]\n"
              "  %4 = transpose %1 {perm=[1,0]} : f32[5,8]\n"
              "  %5 = matmul %4, %0 : f32[5,3]\n"
              "  return %5\n"
              "}\n");
}

TEST(TransposedProducts, AProductUsedElsewhereOrBatchedIsKept) {
  const std::string used_twice =
      "func @main(%0: f32[2,3], %1: f32[3,4]) -> (f32[4,2], f32[2,4]) {\n"
      "  %2 = matmul %0, %1 : f32[2,4]\n"
      "  %3 = transpose %2 {perm=[1,0]} : f32[4,2]\n"
      "  return %3, %2\n"
      "}\n";
  expect_pass(passes::rewrite_transposed_products, used_twice, used_twice, false);
  const std::string batched =
      "func @main(%0: f32[2,2,3], %1: f32[2,3,4]) -> (f32[2,4,2]) {\n"
      "  %2 = matmul %0, %1 : f32[2,2,4]\n"
      "  %3 = transpose %2 {perm=[0,2,1]} : f32[2,4,2]\n"
      "  return %3\n"
      "}\n";
  expect_pass(passes::rewrite_transposed_products, batched, batched, false);
}

TEST(TransposedProducts, LoopBodiesAreRewrittenToo) {
  expect_pass(passes::rewrite_transposed_products,
              "func @main(%0: f32[2,3], %1: f32[3,4]) -> (f32[4,2]) {\n"
              "  %2 = scan %0, %1 {length=1} : f32[1,4,2]\n"
              "    body(%0: i32[], %1: f32[2,3], %2: f32[3,4]) {\n"
              "      %3 = matmul %1, %2 : f32[2,4]\n"
              "      %4 = transpose %3 {perm=[1,0]} : f32[4,2]\n"
              "      yield %4\n"
              "    }\n"
              "  %3 = reshape %2 : f32[4,2]\n"
              "  return %3\n"
              "}\n",
              "func @main(%0: f32[2,3], %1: f32[3,4]) -> (f32[4,2]) {\n"
              "  %2 = scan %0, %1 {length=1} : f32[1,4,2]\n"
              "    body(%0: i32[], %1: f32[2,3], %2: f32[3,4]) {\n"
              "      %3 = matmul %1, %2 : f32[2,4]\n"
              "      %4 = transpose %2 {perm=[1,0]} : f32[4,3]\n"
              "      %5 = transpose %1 {perm=[1,0]} : f32[3,2]\n"
              "      %6 = matmul %4, %5 : f32[4,2]\n"
              "      yield %6\n"
              "    }\n"
              "  %3 = reshape %2 : f32[4,2]\n"
              "  return %3\n"
              "}\n");
}

TEST(TransposedProducts, ATransposedRewrittenProductReadsTheTransposesThePassMade) {
  // The second transpose's product is the first rewrite's, whose operands are values this pass
  // made; reading where they were made once indexed past the pass's tables (a crash that
  // depended on the heap's contents: found by the differential fuzzer under vmap).
  expect_pass(passes::rewrite_transposed_products,
              "func @main(%0: f32[2,3], %1: f32[3,4]) -> (f32[2,4]) {\n"
              "  %2 = matmul %0, %1 : f32[2,4]\n"
              "  %3 = transpose %2 {perm=[1,0]} : f32[4,2]\n"
              "  %4 = transpose %3 {perm=[1,0]} : f32[2,4]\n"
              "  return %4\n"
              "}\n",
              "func @main(%0: f32[2,3], %1: f32[3,4]) -> (f32[2,4]) {\n"
              "  %2 = matmul %0, %1 : f32[2,4]\n"
              "  %3 = transpose %1 {perm=[1,0]} : f32[4,3]\n"
              "  %4 = transpose %0 {perm=[1,0]} : f32[3,2]\n"
              "  %5 = matmul %3, %4 : f32[4,2]\n"
              "  %6 = matmul %0, %1 : f32[2,4]\n"
              "  return %6\n"
              "}\n");
}
