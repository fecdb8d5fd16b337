// fori_loop, scan, while_loop and cond: values on every backend, captures from enclosing
// functions, nesting, and that a loop is recorded once rather than unrolled.
#include <cmath>
#include <string>
#include <vector>

#include "common/test_util.h"

namespace fx = fluxion;

class Loops : public fx::testing::BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Loops);

namespace {
int count_lines_with(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}
}  // namespace

TEST_P(Loops, ForiLoopSumsIndices) {
  auto f = fx::jit([](fx::Tensor s) {
    return fx::fori_loop(2, 7, [](fx::Tensor i, fx::Tensor acc) { return acc + i; }, s);
  }, backend());
  EXPECT_ARRAY(f(fx::Array::scalar(int32_t{100})), {}, {100 + 2 + 3 + 4 + 5 + 6});
}

TEST_P(Loops, ForiLoopEmptyRangeReturnsInit) {
  auto f = fx::jit([](fx::Tensor s) {
    return fx::fori_loop(5, 5, [](fx::Tensor, fx::Tensor acc) { return acc * 2.0; }, s);
  }, backend());
  EXPECT_ARRAY(f(fx::Array(std::vector<float>{1.5f, -2}, {2})), {2}, {1.5, -2});
}

TEST_P(Loops, ForiLoopTupleCarryFibonacci) {
  auto f = fx::jit([](fx::Tensor a, fx::Tensor b) {
    using C = std::pair<fx::Tensor, fx::Tensor>;
    return fx::fori_loop(0, 10, [](fx::Tensor, C c) { return C{c.second, c.first + c.second}; }, C{a, b});
  }, backend());
  auto [x, y] = f(fx::Array::scalar(int32_t{0}), fx::Array::scalar(int32_t{1}));
  EXPECT_ARRAY(x, {}, {55});
  EXPECT_ARRAY(y, {}, {89});
}

TEST_P(Loops, CarriesSwappedThroughReshapesReadTheOldValues) {
  // Each new carry is a reshape of the other carry (bytes shared with it): both must read the
  // values from before the step. 300 elements: a body too large for a straight-line kernel.
  auto f = fx::jit([](fx::Tensor a, fx::Tensor b) {
    using C = std::pair<fx::Tensor, fx::Tensor>;
    return fx::fori_loop(0, 3, [](fx::Tensor, C c) { return C{fx::reshape(c.second, {300}), fx::reshape(c.first, {10, 30})}; },
                         C{a, b});
  }, backend());
  std::vector<double> av(300), bv(300);
  for (int i = 0; i < 300; ++i) av[static_cast<size_t>(i)] = i, bv[static_cast<size_t>(i)] = -1 - i;
  auto [x, y] = f(fx::testing::make(fx::f32, av, {300}), fx::testing::make(fx::f32, bv, {10, 30}));
  // Three swaps: a ends as the old b, b as the old a.
  EXPECT_ARRAY(x, {300}, bv);
  EXPECT_ARRAY(y, {10, 30}, av);
}

TEST_P(Loops, BodyCapturesEnclosingTensors) {
  FLUXION_REQUIRE_F64(backend());
  // x and w live in the enclosing function; the body uses them directly.
  auto f = fx::jit([](fx::Tensor x, fx::Tensor w) {
    return fx::fori_loop(0, 3, [&](fx::Tensor, fx::Tensor s) { return s * w + x; }, fx::zeros_like(x));
  }, backend());
  fx::Array x(std::vector<double>{1, 2}, {2});
  fx::Array w(std::vector<double>{0.5, 2}, {2});
  // s1 = x, s2 = x*w + x, s3 = (x*w + x)*w + x
  EXPECT_ARRAY(f(x, w), {2}, {1 * 0.25 + 0.5 + 1, 2 * 4 + 4 + 2});
}

TEST_P(Loops, NestedLoopsCaptureFromGrandparent) {
  auto f = fx::jit([](fx::Tensor x) {
    return fx::fori_loop(0, 3, [&](fx::Tensor i, fx::Tensor s) {
      return fx::fori_loop(0, 4, [&](fx::Tensor j, fx::Tensor t) { return t + x * fx::cast(i * j, fx::f32); }, s);
    }, fx::zeros_like(x));
  }, backend());
  // sum over i<3, j<4 of i*j = (0+1+2)*(0+1+2+3) = 18
  EXPECT_ARRAY(f(fx::Array(std::vector<float>{1, -2}, {2})), {2}, {18, -36});
}

TEST_P(Loops, ScanCumulativeSumStacksOutputs) {
  auto f = fx::jit([](fx::Tensor xs) {
    return fx::scan([](fx::Tensor c, fx::Tensor x) { return std::make_pair(c + x, c * 10.0); },
                    fx::zeros({2}), xs);
  }, backend());
  fx::Array xs(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2});
  auto [carry, ys] = f(xs);
  EXPECT_ARRAY(carry, {2}, {9, 12});
  EXPECT_ARRAY(ys, {3, 2}, {0, 0, 10, 20, 40, 60});
}

// Per-step outputs are computed in their slice of the stacked result where they can be: one that
// is also the new carry, one returned twice, an input slice, a reshape, and one read again by
// a later kernel of the same step.
TEST_P(Loops, ScanOutputsSharedWithCarriesInputsAndEachOther) {
  auto f = fx::jit(
      [](fx::Tensor xs) {
        auto body = [](fx::Tensor c, fx::Tensor x) {
          fx::Tensor n = c + x, y = n * 2.0;
          return std::make_pair(n, std::make_tuple(n, n, x, y, fx::reshape(y, {2, 1}), y + n));
        };
        return fx::scan(body, fx::zeros({2}), xs);
      },
      backend());
  auto [carry, ys] = f(fx::Array(std::vector<float>{1, 2, 3, 4, 5, 6}, {3, 2}));
  EXPECT_ARRAY(carry, {2}, {9, 12});
  EXPECT_ARRAY(std::get<0>(ys), {3, 2}, {1, 2, 4, 6, 9, 12});
  EXPECT_ARRAY(std::get<1>(ys), {3, 2}, {1, 2, 4, 6, 9, 12});
  EXPECT_ARRAY(std::get<2>(ys), {3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_ARRAY(std::get<3>(ys), {3, 2}, {2, 4, 8, 12, 18, 24});
  EXPECT_ARRAY(std::get<4>(ys), {3, 2, 1}, {2, 4, 8, 12, 18, 24});
  EXPECT_ARRAY(std::get<5>(ys), {3, 2}, {3, 6, 12, 18, 27, 36});
}

TEST_P(Loops, ScanReverseKeepsStepOrderOfOutputs) {
  auto f = fx::jit([](fx::Tensor xs) {
    return fx::scan([](fx::Tensor c, fx::Tensor x) { return std::make_pair(c + x, c + x); }, fx::scalar(0), xs,
                    {.reverse = true});
  }, backend());
  auto [carry, ys] = f(fx::Array(std::vector<float>{1, 2, 3}, {3}));
  EXPECT_ARRAY(carry, {}, {6});
  EXPECT_ARRAY(ys, {3}, {6, 5, 3});  // suffix sums
}

TEST_P(Loops, ScanWithoutInputsAndTupleOutputs) {
  FLUXION_REQUIRE_F64(backend());
  auto f = fx::jit([](fx::Tensor s0) {
    auto body = [](fx::Tensor s, std::tuple<>) { return std::make_pair(s * 2.0, std::make_tuple(s, s + 1.0)); };
    return fx::scan(body, s0, std::tuple<>{}, {.length = 4});
  }, backend());
  auto [s, ys] = f(fx::Array::scalar(1.0));
  EXPECT_ARRAY(s, {}, {16});
  EXPECT_ARRAY(std::get<0>(ys), {4}, {1, 2, 4, 8});
  EXPECT_ARRAY(std::get<1>(ys), {4}, {2, 3, 5, 9});
}

TEST_P(Loops, WhileLoopDataDependentExit) {
  // Collatz: steps for n to reach 1; the trip count depends on the input value.
  auto f = fx::jit([](fx::Tensor n) {
    using C = std::pair<fx::Tensor, fx::Tensor>;
    C r = fx::while_loop([](C c) { return c.first != 1; },
                         [](C c) {
                           fx::Tensor even = fx::eq(c.first - (c.first / 2) * 2, fx::zeros_like(c.first));
                           return C{fx::where(even, c.first / 2, c.first * 3 + 1), c.second + 1};
                         },
                         C{n, fx::zeros({}, fx::i32)});
    return r.second;
  }, backend());
  EXPECT_ARRAY(f(fx::Array::scalar(int32_t{6})), {}, {8});
  EXPECT_ARRAY(f(fx::Array::scalar(int32_t{27})), {}, {111});
  EXPECT_ARRAY(f(fx::Array::scalar(int32_t{1})), {}, {0});
}

TEST_P(Loops, WhileLoopNewtonSqrtWithCapture) {
  FLUXION_REQUIRE_F64(backend());
  auto f = fx::jit([](fx::Tensor a) {
    fx::Tensor x = fx::while_loop([&](fx::Tensor x) { return fx::abs(x * x - a) > 1e-12; },
                                  [&](fx::Tensor x) { return (x + a / x) * 0.5; }, a, 100);
    return x;
  }, backend());
  EXPECT_ARRAY(f(fx::Array::scalar(2.0)), {}, {std::sqrt(2.0)});
}

TEST_P(Loops, CondPicksBranchAtRunTime) {
  auto f = fx::jit([](fx::Tensor x, fx::Tensor y) {
    return fx::cond(fx::sum(x) > 0.0, [&] { return x * 2.0 + y; }, [&] { return -y; });
  }, backend());
  fx::Array y(std::vector<float>{1, 2}, {2});
  EXPECT_ARRAY(f(fx::Array(std::vector<float>{1, 1}, {2}), y), {2}, {3, 4});
  EXPECT_ARRAY(f(fx::Array(std::vector<float>{-1, -1}, {2}), y), {2}, {-1, -2});
}

TEST_P(Loops, CondInsideLoopWithTupleResult) {
  auto f = fx::jit([](fx::Tensor x) {
    return fx::fori_loop(0, 6, [&](fx::Tensor i, fx::Tensor s) {
      auto r = fx::cond(fx::eq(i - (i / 2) * 2, fx::scalar(0, fx::i32)), [&] { return std::make_tuple(s + x, x); },
                        [&] { return std::make_tuple(s - 1.0, x); });
      return std::get<0>(r);
    }, fx::zeros_like(x));
  }, backend());
  // three even steps add x, three odd steps subtract 1
  EXPECT_ARRAY(f(fx::Array::scalar(10.0f)), {}, {27});
}

TEST_P(Loops, RandomKeysFoldedPerStepDiffer) {
  auto f = fx::jit([](fx::Tensor seed_key) {
    return fx::scan([&](fx::Tensor c, fx::Tensor i) {
      fx::Tensor u = fx::random::uniform(fx::random::fold_in(seed_key, i), {});
      return std::make_pair(c, u);
    }, fx::scalar(0), fx::arange(5));
  }, backend());
  std::vector<float> u = f(fx::Array(std::vector<int32_t>{7, 9}, {2})).second.to_vector<float>();
  ASSERT_EQ(u.size(), 5u);
  for (size_t i = 0; i < u.size(); ++i) {
    EXPECT_GE(u[i], 0.0f);
    EXPECT_LT(u[i], 1.0f);
    for (size_t j = 0; j < i; ++j) EXPECT_NE(u[i], u[j]);
  }
}

TEST_P(Loops, LoopIsRecordedOnceNotUnrolled) {
  auto f = fx::jit([](fx::Tensor s) {
    return fx::fori_loop(0, 8000, [](fx::Tensor, fx::Tensor s) { return fx::sigmoid(s * 0.5) + 0.1; }, s);
  }, backend());
  std::string ir = f.lower(fx::Array::scalar(0.0f)).ir();
  EXPECT_EQ(count_lines_with(ir, " = scan "), 1) << ir;
  EXPECT_EQ(count_lines_with(ir, "sigmoid"), 1) << ir;
  EXPECT_NE(ir.find("length=8000"), std::string::npos) << ir;
  double s = 0;
  for (int i = 0; i < 8000; ++i) s = static_cast<float>(1 / (1 + std::exp(-static_cast<float>(s * 0.5f))) + 0.1f);
  EXPECT_ARRAY(f(fx::Array::scalar(0.0f)), {}, {s});
}
