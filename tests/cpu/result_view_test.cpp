// A view that is a program result and is also read by another kernel. The result is stored by a
// copy kernel that the fuser adds after every node (need_buffer on the results), so the readers
// fused before it are ordered after the view's operands, not after the copy: they must read the
// view through its operands (a product's strided view, a loop's index math), never the copy's
// buffer, which is still unwritten when they run (it read uninitialised memory: values up to 1e34).
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <cmath>
#include <vector>

#include "common/test_util.h"

namespace fx = fluxion;
using fx::Array;
using fx::Tensor;

namespace {

Array uniform(const fx::Shape& shape, uint32_t seed, double lo, double hi) {
  return fx::testing::make(fx::f32, fx::testing::random_doubles(fx::numel(shape), lo, hi, seed), shape);
}

// f's results on the CPU backend equal the interpreter's within `tolerance` relative to 1 + |value|.
template <class F, class... A>
void expect_cpu_matches_interpreter(double tolerance, F f, const A&... args) {
  std::vector<Array> got = fx::jit(f, fx::Backend::Cpu)(args...);
  std::vector<Array> want = fx::jit(f, fx::Backend::Interp)(args...);
  ASSERT_EQ(got.size(), want.size());
  for (size_t r = 0; r < got.size(); ++r) {
    std::vector<double> g = got[r].to_doubles(), w = want[r].to_doubles();
    ASSERT_EQ(g.size(), w.size()) << "result " << r;
    for (size_t i = 0; i < g.size(); ++i)
      ASSERT_NEAR(g[i], w[i], tolerance * (1 + std::abs(w[i]))) << "result " << r << " element " << i;
  }
}

Array x48() { return uniform({4, 8}, 1, -1, 1); }
Array w43() { return uniform({4, 3}, 2, -1, 1); }

// The per-example gradient of a two-layer network's output layer, with the per-example output
// gradients (a transpose and reshape of a product's epilogue) also returned: the batched product
// read them from the result's copy, stored by the kernel after it.
TEST(ResultView, PerExampleGradientAndItsOperand) {
  constexpr int64_t kB = 128, kIn = 784, kHidden = 32, kOut = 10;
  auto f = [](const std::vector<Tensor>& p, const Tensor& xs) {
    Tensor cols = fx::reshape(fx::permute(xs, {1, 0, 2}), {kIn, kB});
    Tensor h = fx::tanh(fx::matmul(p[0], cols) + p[1]);
    Tensor dy = (fx::matmul(p[2], h) + p[3]) * 2.0f;
    auto per_example = [](const Tensor& t) { return fx::expand_dims(fx::transpose(t), 2); };
    return std::vector<Tensor>{fx::matmul(per_example(dy), fx::permute(per_example(h), {0, 2, 1})), per_example(dy)};
  };
  std::vector<Array> p = {uniform({kHidden, kIn}, 1, -0.1, 0.1), uniform({kHidden, 1}, 2, -0.1, 0.1),
                          uniform({kOut, kHidden}, 3, -0.1, 0.1), uniform({kOut, 1}, 4, -0.1, 0.1)};
  Array xs = uniform({kB, kIn, 1}, 5, 0, 1);
  std::string kernels = fx::jit(f, fx::Backend::Cpu).lower(p, xs).kernels();
  EXPECT_NE(kernels.find("kernel 3 loop[nest] [128,10,1] parallel: reshape"), std::string::npos) << kernels;
  expect_cpu_matches_interpreter(1e-4, f, p, xs);
}

// The smallest form: a product of a transposed value that is also returned.
TEST(ResultView, ProductOfReturnedTranspose) {
  auto f = [](Tensor x, Tensor w) {
    Tensor t = fx::transpose(x * 2.0f);
    return std::vector<Tensor>{fx::matmul(t, w), t};
  };
  expect_cpu_matches_interpreter(1e-5, f, x48(), w43());
}

TEST(ResultView, ProductOfReturnedTransposedParameter) {
  auto f = [](Tensor x, Tensor w) {
    Tensor t = fx::transpose(x);
    return std::vector<Tensor>{fx::matmul(t, w), t};
  };
  expect_cpu_matches_interpreter(1e-5, f, x48(), w43());
}

// A reshape of the returned transpose: it must not become an alias of the copy's bytes.
TEST(ResultView, ProductOfReshapedReturnedTranspose) {
  auto f = [](Tensor x, Tensor w) {
    Tensor t = fx::transpose(x * 2.0f);
    return std::vector<Tensor>{fx::matmul(fx::expand_dims(t, 0), fx::expand_dims(w, 0)), t};
  };
  expect_cpu_matches_interpreter(1e-5, f, x48(), w43());
}

TEST(ResultView, LoopReadingReshapedReturnedTranspose) {
  auto f = [](Tensor x, Tensor w) {
    Tensor t = fx::transpose(x * 2.0f);
    return std::vector<Tensor>{fx::exp(fx::reshape(t, {32})) + fx::sum(w), t};
  };
  expect_cpu_matches_interpreter(1e-5, f, x48(), w43());
}

}  // namespace
