// Straight-line kernels (docs/kernels.md): a loop body whose arrays are all tiny runs as one
// block of code. These tests check when the fuser chooses it and that the code it becomes
// computes what the interpreter computes, op family by op family, gradients included.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include "common/test_util.h"

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

namespace fx = fluxion;
using fx::Array;
using fx::Backend;
using fx::Tensor;
using fx::testing::matches;
using fx::testing::random_values;
using fx::testing::Tol;

namespace {

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = 0; (pos = text.find(what, pos)) != std::string::npos; pos += what.size()) ++n;
  return n;
}

// The body of every scan in `text` (lines between "body:" and the closing brace).
std::vector<std::string> scan_bodies(const std::string& text) {
  std::vector<std::string> out;
  for (size_t pos = 0; (pos = text.find("body:", pos)) != std::string::npos; ++pos) {
    out.push_back(text.substr(pos, text.find('}', pos) - pos));
  }
  return out;
}

Array random_array(fx::DType t, fx::Shape shape, double lo, double hi, uint32_t seed) {
  return fx::testing::make(t, random_values(t, fx::testing::count(shape), lo, hi, seed), shape);
}

// Every output of f on the CPU against the interpreter.
template <class F, class... Args>
void expect_cpu_matches_interpreter(F f, Tol tol, const Args&... args) {
  auto want = fx::jit(f, Backend::Interp)(args...);
  auto got = fx::jit(f, Backend::Cpu)(args...);
  std::vector<Array> w, g;
  fx::tree::flatten<Array>(want, w);
  fx::tree::flatten<Array>(got, g);
  ASSERT_EQ(w.size(), g.size());
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_TRUE(matches(g[i], w[i].dtype(), w[i].shape(), w[i].to_doubles(), tol)) << "output " << i;
  }
}

// W7 (WORKLOADS.md), with its width and length as parameters.
Tensor small_loop(const Tensor& w1, const Tensor& w2, const Tensor& noise) {
  Tensor k1 = fx::softplus(w1), k2 = fx::softplus(w2);
  return fx::scan([&](const Tensor& s, const Tensor& n) {
                    return std::make_pair(fx::sigmoid(fx::dot(k2, fx::sigmoid(s * k1))) + n, std::tuple<>{});
                  },
                  fx::scalar(0.5), noise)
      .first;
}

// A body touching every op family a straight-line kernel computes: matmul, reductions over
// either axis, argmax, views (transpose, slice, pad, concat, broadcast), gather and take, i32
// arithmetic (division by zero included), bool logic, select, and the vector math functions.
std::tuple<Tensor, Tensor, Tensor, Tensor> every_family(const Tensor& h0, const Tensor& w, const Tensor& b,
                                                         const Tensor& xs) {
  auto body = [&](const std::tuple<Tensor, Tensor, Tensor>& c, const Tensor& x) {
    const auto& [h, count, flag] = c;
    Tensor a = fx::tanh(fx::matmul(h, w) + b);                           // [3,4]
    Tensor col = fx::sum(a, {0});                                        // [4]
    Tensor row = fx::max(a, {1});                                        // [3]
    Tensor arg = fx::argmax(a, 1);                                       // i32[3]
    Tensor t = fx::slice_axis(fx::transpose(a), 0, 1, 3);                // [2,3]
    Tensor padded = fx::pad(fx::slice_axis(x, 0, 0, 2), {{1, 0}});       // [3]
    Tensor picked = fx::take(x, arg, 0) + fx::reshape(fx::gather(a, fx::expand_dims(arg, 1), 1), {3});
    Tensor total = fx::sum(arg);                                         // i32[]
    Tensor next_count = count + fx::div(total, total - total);           // x / 0 = 0 for i32
    Tensor positive = fx::gt(row, fx::zeros({3}));
    Tensor next_flag = fx::logical_and(positive, fx::logical_not(flag));
    Tensor chosen = fx::where(next_flag, row, -row);
    Tensor math = fx::atan2(col, 1.5) + fx::erf(col) + fx::log1p(fx::abs(col)) + fx::expm1(col * 0.5) +
                  fx::exp(-col) + fx::sqrt(fx::abs(col) + 1.0) + fx::sin(col) + fx::cos(col) + fx::pow(fx::abs(col) + 1.0, 1.5);
    Tensor next_h = a * 0.5 + fx::broadcast_to(fx::reshape(chosen + picked + padded, {3, 1}), {3, 4}) * 0.1 +
                    fx::broadcast_to(math, {3, 4}) * 0.01 + fx::sum(t) * 0.001;
    Tensor y = fx::concat({fx::cast(arg, fx::f32), chosen, fx::reshape(t, {6}), math}, 0);
    return std::make_pair(std::make_tuple(next_h, next_count + total, next_flag), y);
  };
  auto [carry, ys] = fx::scan(body, std::make_tuple(h0, fx::scalar(1, fx::i32), fx::zeros({3}, fx::boolean)), xs);
  return {std::get<0>(carry), std::get<1>(carry), std::get<2>(carry), ys};
}

}  // namespace

TEST(StraightLine, SmallLoopBodiesAreOneKernelForwardAndBackward) {
  auto g = fx::jit(fx::value_and_grad(small_loop, {0, 1}), Backend::Cpu);
  std::string text = g.lower(Array(fx::f32, {12}), Array(fx::f32, {12}), Array(fx::f32, {50})).kernels();
  std::vector<std::string> bodies = scan_bodies(text);
  ASSERT_EQ(bodies.size(), 2u) << text;
  for (const std::string& body : bodies) {
    EXPECT_EQ(count_of(body, "kernel "), 1u) << text;
    EXPECT_EQ(count_of(body, "kernel 0 straight[block] []:"), 1u) << text;
  }
  // The reverse body holds the forward recomputation and every adjoint op.
  EXPECT_NE(bodies[1].find("matmul"), std::string::npos) << text;
  EXPECT_NE(bodies[1].find("reduce_sum"), std::string::npos) << text;
}

TEST(StraightLine, LargerBodiesKeepLoopKernels) {
  // 16 x 32 = 512 elements per array: over kMaxStraightLineElements.
  auto f = fx::jit([](const Tensor& h0, const Tensor& w) {
    return fx::fori_loop(0, 4, [&](const Tensor&, const Tensor& h) { return fx::tanh(fx::matmul(h, w)); }, h0);
  }, Backend::Cpu);
  std::string text = f.lower(Array(fx::f32, {16, 32}), Array(fx::f32, {32, 32})).kernels();
  EXPECT_EQ(count_of(text, " straight["), 0u) << text;
  EXPECT_EQ(count_of(text, "kernel 0 matmul["), 1u) << text;
}

TEST(StraightLine, SmallLoopMatchesTheInterpreterValueAndGradient) {
  Array w1 = random_array(fx::f32, {12}, -1, 1, 1), w2 = random_array(fx::f32, {12}, -1, 1, 2);
  Array noise = random_array(fx::f32, {200}, -0.05, 0.05, 3);
  expect_cpu_matches_interpreter(small_loop, Tol::loose(1e-5), w1, w2, noise);
  expect_cpu_matches_interpreter(fx::value_and_grad(small_loop, {0, 1}), Tol::loose(1e-5), w1, w2, noise);
}

TEST(StraightLine, EveryOpFamilyMatchesTheInterpreter) {
  Array h0 = random_array(fx::f32, {3, 4}, -1, 1, 4), w = random_array(fx::f32, {4, 4}, -1, 1, 5);
  Array b = random_array(fx::f32, {4}, -0.5, 0.5, 6), xs = random_array(fx::f32, {7, 3}, -1, 1, 7);
  std::string text = fx::jit(every_family, Backend::Cpu).lower(h0, w, b, xs).kernels();
  std::vector<std::string> bodies = scan_bodies(text);
  ASSERT_EQ(bodies.size(), 1u) << text;
  ASSERT_EQ(count_of(bodies[0], "kernel "), 1u) << text;
  ASSERT_NE(bodies[0].find("straight"), std::string::npos) << text;
  expect_cpu_matches_interpreter(every_family, Tol::loose(1e-5), h0, w, b, xs);
}

TEST(StraightLine, F64GradientMatchesTheInterpreterClosely) {
  auto loss = [](const Tensor& w, const Tensor& b, const Tensor& xs) {
    auto body = [&](const Tensor& h, const Tensor& x) {
      Tensor next = fx::tanh(fx::matmul(w, h) + b * x);
      return std::make_pair(next, fx::max(next) - fx::min(next));
    };
    auto [h, ys] = fx::scan(body, fx::ones({5}, fx::f64), xs);
    return fx::sum(h * h) + fx::sum(ys);
  };
  Array w = random_array(fx::f64, {5, 5}, -0.8, 0.8, 8), b = random_array(fx::f64, {5}, -1, 1, 9);
  Array xs = random_array(fx::f64, {30}, -1, 1, 10);
  expect_cpu_matches_interpreter(fx::value_and_grad(loss, {0, 1}), Tol::sum(200, 10), w, b, xs);
}

TEST(StraightLine, SignedZerosAndNaNsAsTheInterpreterHasThem) {
  // A sum of two -0 is +0 (sums start from +0), so 1/sum is +inf; max propagates NaN.
  auto f = [](const Tensor& x, const Tensor& xs) {
    auto body = [](const Tensor& c, const Tensor& row) {
      Tensor y = fx::concat({fx::reshape(1.0 / fx::sum(c), {1}), fx::reshape(fx::max(row), {1}),
                             fx::reshape(fx::sum(fx::matmul(fx::reshape(c, {1, 2}), fx::reshape(c, {2, 1}))), {1})}, 0);
      return std::make_pair(c, y);
    };
    return fx::scan(body, x, xs).second;
  };
  Array x(std::vector<float>{-0.0f, -0.0f}, {2});
  Array xs = fx::testing::make(fx::f32, {1, fx::testing::kNaN, 2, 3, 4, 5}, {2, 3});
  std::string text = fx::jit(f, Backend::Cpu).lower(x, xs).kernels();
  ASSERT_NE(text.find("straight"), std::string::npos) << text;
  expect_cpu_matches_interpreter(f, Tol::arith(), x, xs);
  std::vector<float> y = fx::jit(f, Backend::Cpu)(x, xs).to_vector<float>();
  EXPECT_TRUE(std::isinf(y[0]) && y[0] > 0);
  EXPECT_TRUE(std::isnan(y[1]));
  EXPECT_EQ(y[4], 5.0f);
}

TEST(StraightLine, CarriesThatSwapReadTheOldValues) {
  // (a, b) -> (b, a + b): the first result is another carry's parameter, returned as it is.
  auto fib = [](const Tensor& a0, const Tensor& b0) {
    auto [a, b] = fx::fori_loop(0, 10, [](const Tensor&, const std::pair<Tensor, Tensor>& c) {
      return std::make_pair(c.second, c.first + c.second);
    }, std::make_pair(a0, b0));
    return std::make_pair(a, b);
  };
  Array a0(std::vector<float>{0, 1, 2, 3, 4}, {5}), b0(std::vector<float>{1, 1, 1, 1, 1}, {5});
  std::string text = fx::jit(fib, Backend::Cpu).lower(a0, b0).kernels();
  ASSERT_NE(text.find("straight"), std::string::npos) << text;
  auto [a, b] = fx::jit(fib, Backend::Cpu)(a0, b0);
  // fib(10) = 55 and fib(11) = 89 for (0, 1); the recurrence is linear in (a0, b0).
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{55, 89, 123, 157, 191}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{89, 144, 199, 254, 309}));
}
