// Elementwise binary ops, comparisons, where and cast: every op in every dtype it accepts, with
// broadcasting edge cases ([3,1] with [1,4], rank 0 with [2,3], [0,3] with [1,3], ...), C++
// scalars on either side, i32 division, NaN propagation.
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/test_names.h"

namespace {

using BinFn = std::function<Tensor(const Tensor&, const Tensor&)>;
using RefFn = std::function<double(double, double)>;

struct BinaryCase {
  const char* name;
  BinFn op;
  RefFn ref;
  double alo, ahi, blo, bhi;  // random input domains
  Tol tol;
};

// NumPy-style NaN-propagating maximum / minimum.
double max_ref(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }
double min_ref(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); }
// i32 division truncates toward zero; x / 0 = 0.
double idiv_ref(double a, double b) {
  if (b == 0) return 0;
  return static_cast<double>(static_cast<int32_t>(a) / static_cast<int32_t>(b));
}

// Divisors kept away from 0: |b| in [0.5, 3].
std::vector<double> away_from_zero(std::vector<double> v) {
  for (double& x : v) x = x < 0 ? x - 0.5 : x + 0.5;
  return v;
}

const std::vector<std::pair<Shape, Shape>>& shape_pairs() {
  static const std::vector<std::pair<Shape, Shape>> p{
      {{3, 1}, {1, 4}}, {{}, {2, 3}},     {{2, 3}, {}},     {{0, 3}, {1, 3}}, {{1, 3}, {0, 3}}, {{2, 3}, {2, 3}},
      {{4, 1, 3}, {2, 1}}, {{5}, {3, 1}}, {{}, {}},         {{1}, {3}},       {{2, 0}, {2, 1}},
  };
  return p;
}

// want[i] = ref(a, b) over the broadcast shape, rounded to `out` dtype.
std::vector<double> reference(const std::vector<double>& a, const Shape& sa, const std::vector<double>& b,
                              const Shape& sb, const RefFn& ref, DType out) {
  Shape s = broadcast_shape(sa, sb);
  std::vector<double> ab = broadcast_values(a, sa, s), bb = broadcast_values(b, sb, s), w;
  for (size_t i = 0; i < ab.size(); ++i) w.push_back(round_to(out, ref(ab[i], bb[i])));
  return w;
}

}  // namespace

class Binary : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Binary);

TEST_P(Binary, FloatOpsWithBroadcasting) {
  std::vector<BinaryCase> cases{
      {"add", [](const Tensor& a, const Tensor& b) { return fx::add(a, b); }, [](double a, double b) { return a + b; },
       -3, 3, -3, 3, Tol::arith()},
      {"operator+", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; },
       -3, 3, -3, 3, Tol::arith()},
      {"sub", [](const Tensor& a, const Tensor& b) { return fx::sub(a, b); }, [](double a, double b) { return a - b; },
       -3, 3, -3, 3, Tol::arith()},
      {"operator-", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; },
       -3, 3, -3, 3, Tol::arith()},
      {"mul", [](const Tensor& a, const Tensor& b) { return fx::mul(a, b); }, [](double a, double b) { return a * b; },
       -3, 3, -3, 3, Tol::arith()},
      {"operator*", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; },
       -3, 3, -3, 3, Tol::arith()},
      {"div", [](const Tensor& a, const Tensor& b) { return fx::div(a, b); }, [](double a, double b) { return a / b; },
       -3, 3, -2.5, 2.5, Tol::arith()},
      {"operator/", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; },
       -3, 3, -2.5, 2.5, Tol::arith()},
      {"pow", [](const Tensor& a, const Tensor& b) { return fx::pow(a, b); },
       [](double a, double b) { return std::pow(a, b); }, 0.1, 3, -2, 2, Tol::trans()},
      {"maximum", [](const Tensor& a, const Tensor& b) { return fx::maximum(a, b); }, max_ref, -3, 3, -3, 3,
       Tol::arith()},
      {"minimum", [](const Tensor& a, const Tensor& b) { return fx::minimum(a, b); }, min_ref, -3, 3, -3, 3,
       Tol::arith()},
      {"atan2", [](const Tensor& a, const Tensor& b) { return fx::atan2(a, b); },
       [](double a, double b) { return std::atan2(a, b); }, -3, 3, -3, 3, Tol::trans()},
  };
  uint32_t seed = 1000;
  for (const BinaryCase& c : cases) {
    for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
      for (const auto& [sa, sb] : shape_pairs()) {
        SCOPED_TRACE(std::string(c.name) + " " + fx::dtype_name(dt) + str(sa) + " with " + str(sb));
        std::vector<double> a = random_values(dt, count(sa), c.alo, c.ahi, seed++);
        std::vector<double> b = random_values(dt, count(sb), c.blo, c.bhi, seed++);
        if (std::string(c.name).find("div") != std::string::npos || std::string(c.name) == "operator/") {
          b = round_all(dt, away_from_zero(b));
        }
        auto f = jit([op = c.op](Tensor x, Tensor y) { return op(x, y); });
        Array r = f(make(dt, a, sa), make(dt, b, sb));
        EXPECT_ARRAY(r, dt, broadcast_shape(sa, sb), reference(a, sa, b, sb, c.ref, dt), c.tol);
      }
    }
  }
}

TEST_P(Binary, FloatSpecialValues) {
  // Division by zero follows IEEE for floats; max/min propagate NaN from either side.
  std::vector<double> a{1, -1, 0, kNaN, 1, kNaN, 2, -kInf};
  std::vector<double> b{0, 0, 0, 1, kNaN, kNaN, kInf, 3};
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto f = jit([](Tensor x, Tensor y) {
      return std::make_tuple(x / y, fx::maximum(x, y), fx::minimum(x, y), x + y, x * y);
    });
    auto [q, mx, mn, s, p] = f(make(dt, a, {8}), make(dt, b, {8}));
    EXPECT_ARRAY(q, dt, {8}, {kInf, -kInf, kNaN, kNaN, kNaN, kNaN, 0, -kInf});
    EXPECT_ARRAY(mx, dt, {8}, {1, 0, 0, kNaN, kNaN, kNaN, kInf, 3});
    EXPECT_ARRAY(mn, dt, {8}, {0, -1, 0, kNaN, kNaN, kNaN, 2, -kInf});
    EXPECT_ARRAY(s, dt, {8}, {1, -1, 0, kNaN, kNaN, kNaN, kInf, -kInf});
    EXPECT_ARRAY(p, dt, {8}, {0, -0.0, 0, kNaN, kNaN, kNaN, kInf, -kInf});
    // atan2 quadrants and axes.
    auto g = jit([](Tensor y, Tensor x) { return fx::atan2(y, x); });
    std::vector<double> ys{0, 1, 1, -1, -1, 1, -1, 0};
    std::vector<double> xs{1, 1, -1, -1, 1, 0, 0, -1};
    std::vector<double> want;
    for (size_t i = 0; i < ys.size(); ++i) want.push_back(round_to(dt, std::atan2(ys[i], xs[i])));
    EXPECT_ARRAY(g(make(dt, ys, {8}), make(dt, xs, {8})), dt, {8}, want, Tol::trans());
    // pow: integral exponents of negative bases, x^0 = 1, 0^positive = 0.
    auto h = jit([](Tensor x, Tensor y) { return fx::pow(x, y); });
    EXPECT_ARRAY(h(make(dt, {-2, -2, 5, 0, 4}, {5}), make(dt, {2, 3, 0, 2, 0.5}, {5})), dt, {5},
                 {4, -8, 1, 0, 2}, Tol::trans());
  }
}

TEST_P(Binary, CppScalarsOnEitherSide) {
  using SFn = std::function<Tensor(const Tensor&, double)>;
  struct ScalarCase {
    const char* name;
    SFn op;
    RefFn ref;  // ref(x, s)
    Tol tol;
  };
  std::vector<ScalarCase> cases{
      {"x+s", [](const Tensor& x, double s) { return x + s; }, [](double x, double s) { return x + s; }, Tol::arith()},
      {"s+x", [](const Tensor& x, double s) { return s + x; }, [](double x, double s) { return s + x; }, Tol::arith()},
      {"x-s", [](const Tensor& x, double s) { return x - s; }, [](double x, double s) { return x - s; }, Tol::arith()},
      {"s-x", [](const Tensor& x, double s) { return s - x; }, [](double x, double s) { return s - x; }, Tol::arith()},
      {"x*s", [](const Tensor& x, double s) { return x * s; }, [](double x, double s) { return x * s; }, Tol::arith()},
      {"s*x", [](const Tensor& x, double s) { return s * x; }, [](double x, double s) { return s * x; }, Tol::arith()},
      {"x/s", [](const Tensor& x, double s) { return x / s; }, [](double x, double s) { return x / s; }, Tol::arith()},
      {"s/x", [](const Tensor& x, double s) { return s / x; }, [](double x, double s) { return s / x; }, Tol::arith()},
      {"pow(x,s)", [](const Tensor& x, double s) { return fx::pow(x, s); },
       [](double x, double s) { return std::pow(x, s); }, Tol::trans()},
      {"pow(s,x)", [](const Tensor& x, double s) { return fx::pow(s, x); },
       [](double x, double s) { return std::pow(s, x); }, Tol::trans()},
      {"maximum(x,s)", [](const Tensor& x, double s) { return fx::maximum(x, s); }, max_ref, Tol::arith()},
      {"minimum(x,s)", [](const Tensor& x, double s) { return fx::minimum(x, s); }, min_ref, Tol::arith()},
      {"atan2(x,s)", [](const Tensor& x, double s) { return fx::atan2(x, s); },
       [](double x, double s) { return std::atan2(x, s); }, Tol::trans()},
  };
  uint32_t seed = 2000;
  for (const ScalarCase& c : cases) {
    for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
      for (const Shape& s : {Shape{2, 3}, Shape{}, Shape{0, 3}}) {
        // 0.3 is not a float: the scalar takes the Tensor's dtype, so the reference rounds it too.
        for (double k : {2.0, 0.3, -1.5}) {
          // A negative base to a non-integral power is NaN (as C's pow); FloatSpecialValues covers
          // the negative-base cases that are defined.
          if (k < 0 && std::string(c.name) == "pow(s,x)") continue;
          SCOPED_TRACE(std::string(c.name) + " " + fx::dtype_name(dt) + str(s) + " s=" + std::to_string(k));
          std::vector<double> x = random_values(dt, count(s), 0.5, 3, seed++);  // positive: pow and s/x
          auto f = jit([op = c.op, k](Tensor t) { return op(t, k); });
          double ks = round_to(dt, k);
          std::vector<double> want;
          for (double v : x) want.push_back(round_to(dt, c.ref(v, ks)));
          EXPECT_ARRAY(f(make(dt, x, s)), dt, s, want, c.tol);
        }
      }
    }
  }
}

TEST_P(Binary, IntegerOpsWithBroadcasting) {
  std::vector<BinaryCase> cases{
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; }, -100,
       100, -100, 100, Tol::arith()},
      {"sub", [](const Tensor& a, const Tensor& b) { return fx::sub(a, b); }, [](double a, double b) { return a - b; },
       -100, 100, -100, 100, Tol::arith()},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; }, -100,
       100, -100, 100, Tol::arith()},
      {"div", [](const Tensor& a, const Tensor& b) { return fx::div(a, b); }, idiv_ref, -100, 100, -7, 7,
       Tol::arith()},
      {"operator/", [](const Tensor& a, const Tensor& b) { return a / b; }, idiv_ref, -100, 100, -7, 7, Tol::arith()},
      {"maximum", [](const Tensor& a, const Tensor& b) { return fx::maximum(a, b); }, max_ref, -5, 5, -5, 5,
       Tol::arith()},
      {"minimum", [](const Tensor& a, const Tensor& b) { return fx::minimum(a, b); }, min_ref, -5, 5, -5, 5,
       Tol::arith()},
  };
  uint32_t seed = 3000;
  for (const BinaryCase& c : cases) {
    for (const auto& [sa, sb] : shape_pairs()) {
      SCOPED_TRACE(std::string(c.name) + " i32" + str(sa) + " with " + str(sb));
      std::vector<double> a = random_values(fx::i32, count(sa), c.alo, c.ahi, seed++);
      std::vector<double> b = random_values(fx::i32, count(sb), c.blo, c.bhi, seed++);
      auto f = jit([op = c.op](Tensor x, Tensor y) { return op(x, y); });
      EXPECT_ARRAY(f(make(fx::i32, a, sa), make(fx::i32, b, sb)), fx::i32, broadcast_shape(sa, sb),
                   reference(a, sa, b, sb, c.ref, fx::i32));
    }
  }
}

TEST_P(Binary, IntegerDivisionTruncatesAndDivisionByZeroIsZero) {
  auto f = jit([](Tensor a, Tensor b) { return a / b; });
  // INT_MIN / -1 wraps to INT_MIN.
  std::vector<double> a{7, -7, 7, -7, 6, -6, 1, -1, 5, -5, 0, 2147483647, -2147483647, -2147483648.0, -2147483648.0, 9};
  std::vector<double> b{2, 2, -2, -2, 3, 3, 2, 2, 0, 0, 0, 2, 0, -1, 1, -1};
  Shape s{static_cast<int64_t>(a.size())};
  EXPECT_ARRAY(f(make(fx::i32, a, s), make(fx::i32, b, s)), fx::i32, s,
               {3, -3, -3, 3, 2, -2, 0, 0, 0, 0, 0, 1073741823, 0, -2147483648.0, -2147483648.0, -9});
  // With C++ scalars on either side.
  auto g = jit([](Tensor x) { return std::make_tuple(x / 2.0, 7.0 / x, x / 0.0, x + 3.0, 10.0 - x, x * -2.0); });
  auto [h, q, z, p, m, t] = g(make(fx::i32, {-5, -1, 0, 3, 8}, {5}));
  EXPECT_ARRAY(h, fx::i32, {5}, {-2, 0, 0, 1, 4});
  EXPECT_ARRAY(q, fx::i32, {5}, {-1, -7, 0, 2, 0});
  EXPECT_ARRAY(z, fx::i32, {5}, {0, 0, 0, 0, 0});
  EXPECT_ARRAY(p, fx::i32, {5}, {-2, 2, 3, 6, 11});
  EXPECT_ARRAY(m, fx::i32, {5}, {15, 11, 10, 7, 2});
  EXPECT_ARRAY(t, fx::i32, {5}, {10, 2, 0, -6, -16});
}

// A divisor that is a constant zero of either sign follows IEEE like any other (shader
// compilers fold x / 0.0 to 0 unless it is written otherwise).
TEST_P(Binary, FloatDivisionByConstantZerosOfEitherSign) {
  auto f = jit([](Tensor x) { return std::make_tuple(x / 0.0, x / -0.0); });
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
    auto [pos, neg] = f(make(dt, {1, -2, 0, kNaN, kInf}, {5}));
    EXPECT_ARRAY(pos, dt, {5}, {kInf, -kInf, kNaN, kNaN, kInf});
    EXPECT_ARRAY(neg, dt, {5}, {-kInf, kInf, kNaN, kNaN, -kInf});
  }
}

TEST_P(Binary, LogicalOpsOnBool) {
  std::vector<BinaryCase> cases{
      {"logical_and", [](const Tensor& a, const Tensor& b) { return fx::logical_and(a, b); },
       [](double a, double b) { return a != 0 && b != 0 ? 1.0 : 0.0; }, 0, 1, 0, 1, Tol::arith()},
      {"operator&", [](const Tensor& a, const Tensor& b) { return a & b; },
       [](double a, double b) { return a != 0 && b != 0 ? 1.0 : 0.0; }, 0, 1, 0, 1, Tol::arith()},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return fx::logical_or(a, b); },
       [](double a, double b) { return a != 0 || b != 0 ? 1.0 : 0.0; }, 0, 1, 0, 1, Tol::arith()},
      {"operator|", [](const Tensor& a, const Tensor& b) { return a | b; },
       [](double a, double b) { return a != 0 || b != 0 ? 1.0 : 0.0; }, 0, 1, 0, 1, Tol::arith()},
  };
  uint32_t seed = 4000;
  for (const BinaryCase& c : cases) {
    for (const auto& [sa, sb] : shape_pairs()) {
      SCOPED_TRACE(std::string(c.name) + str(sa) + " with " + str(sb));
      std::vector<double> a = random_values(fx::boolean, count(sa), 0, 1, seed++);
      std::vector<double> b = random_values(fx::boolean, count(sb), 0, 1, seed++);
      auto f = jit([op = c.op](Tensor x, Tensor y) { return op(x, y); });
      EXPECT_ARRAY(f(make(fx::boolean, a, sa), make(fx::boolean, b, sb)), fx::boolean, broadcast_shape(sa, sb),
                   reference(a, sa, b, sb, c.ref, fx::boolean));
    }
  }
  // The full truth tables.
  auto f = jit([](Tensor x, Tensor y) { return std::make_pair(x & y, x | y); });
  auto [andv, orv] = f(make(fx::boolean, {0, 0, 1, 1}, {4}), make(fx::boolean, {0, 1, 0, 1}, {4}));
  EXPECT_ARRAY(andv, fx::boolean, {4}, {0, 0, 0, 1});
  EXPECT_ARRAY(orv, fx::boolean, {4}, {0, 1, 1, 1});
}

TEST_P(Binary, ComparisonsWithBroadcasting) {
  auto b01 = [](bool v) { return v ? 1.0 : 0.0; };
  struct CmpCase {
    const char* name;
    BinFn op;
    RefFn ref;
  };
  std::vector<CmpCase> cases{
      {"eq", [](const Tensor& a, const Tensor& b) { return fx::eq(a, b); }, [&](double a, double b) { return b01(a == b); }},
      {"==", [](const Tensor& a, const Tensor& b) { return a == b; }, [&](double a, double b) { return b01(a == b); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return fx::ne(a, b); }, [&](double a, double b) { return b01(a != b); }},
      {"!=", [](const Tensor& a, const Tensor& b) { return a != b; }, [&](double a, double b) { return b01(a != b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return fx::lt(a, b); }, [&](double a, double b) { return b01(a < b); }},
      {"<", [](const Tensor& a, const Tensor& b) { return a < b; }, [&](double a, double b) { return b01(a < b); }},
      {"le", [](const Tensor& a, const Tensor& b) { return fx::le(a, b); }, [&](double a, double b) { return b01(a <= b); }},
      {"<=", [](const Tensor& a, const Tensor& b) { return a <= b; }, [&](double a, double b) { return b01(a <= b); }},
      {"gt", [](const Tensor& a, const Tensor& b) { return fx::gt(a, b); }, [&](double a, double b) { return b01(a > b); }},
      {">", [](const Tensor& a, const Tensor& b) { return a > b; }, [&](double a, double b) { return b01(a > b); }},
      {"ge", [](const Tensor& a, const Tensor& b) { return fx::ge(a, b); }, [&](double a, double b) { return b01(a >= b); }},
      {">=", [](const Tensor& a, const Tensor& b) { return a >= b; }, [&](double a, double b) { return b01(a >= b); }},
  };
  uint32_t seed = 5000;
  for (const CmpCase& c : cases) {
    for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64, fx::i32})) {
      for (const auto& [sa, sb] : shape_pairs()) {
        SCOPED_TRACE(std::string(c.name) + " " + fx::dtype_name(dt) + str(sa) + " with " + str(sb));
        // Small integers (also for floats) so that ties occur.
        std::vector<double> a = random_ints(count(sa), -2, 2, seed++);
        std::vector<double> b = random_ints(count(sb), -2, 2, seed++);
        if (dt != fx::i32) {
          for (double& v : a) v *= 0.5;
          for (double& v : b) v *= 0.5;
        }
        auto f = jit([op = c.op](Tensor x, Tensor y) { return op(x, y); });
        EXPECT_ARRAY(f(make(dt, a, sa), make(dt, b, sb)), fx::boolean, broadcast_shape(sa, sb),
                     reference(a, sa, b, sb, c.ref, fx::boolean));
      }
    }
  }
  // eq / ne on bool.
  auto f = jit([](Tensor x, Tensor y) { return std::make_pair(x == y, fx::ne(x, y)); });
  auto [e, n] = f(make(fx::boolean, {0, 1}, {2, 1}), make(fx::boolean, {0, 1, 1}, {1, 3}));
  EXPECT_ARRAY(e, fx::boolean, {2, 3}, {1, 0, 0, 0, 1, 1});
  EXPECT_ARRAY(n, fx::boolean, {2, 3}, {0, 1, 1, 1, 0, 0});
}

TEST_P(Binary, ComparisonsWithScalarsAndNaN) {
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto f = jit([](Tensor x) {
      return std::vector<Tensor>{x == 0.5, x != 0.5, x < 0.5, x <= 0.5, x > 0.5, x >= 0.5};
    });
    std::vector<Array> r = f(make(dt, {0, 0.5, 1, kNaN}, {4}));
    ASSERT_EQ(r.size(), 6u);
    EXPECT_ARRAY(r[0], fx::boolean, {4}, {0, 1, 0, 0});
    EXPECT_ARRAY(r[1], fx::boolean, {4}, {1, 0, 1, 1});
    EXPECT_ARRAY(r[2], fx::boolean, {4}, {1, 0, 0, 0});
    EXPECT_ARRAY(r[3], fx::boolean, {4}, {1, 1, 0, 0});
    EXPECT_ARRAY(r[4], fx::boolean, {4}, {0, 0, 1, 0});
    EXPECT_ARRAY(r[5], fx::boolean, {4}, {0, 1, 1, 0});
  }
  // NaN == NaN is false; NaN != NaN is true.
  auto g = jit([](Tensor x) { return std::make_pair(x == x, x != x); });
  auto [e, n] = g(make(fx::f32, {kNaN, 1}, {2}));
  EXPECT_ARRAY(e, fx::boolean, {2}, {0, 1});
  EXPECT_ARRAY(n, fx::boolean, {2}, {1, 0});
  // i32 with an integral scalar.
  auto h = jit([](Tensor x) { return std::make_pair(x >= 2.0, x == -1.0); });
  auto [ge, eq] = h(make(fx::i32, {-1, 2, 3, 1}, {2, 2}));
  EXPECT_ARRAY(ge, fx::boolean, {2, 2}, {0, 1, 1, 0});
  EXPECT_ARRAY(eq, fx::boolean, {2, 2}, {1, 0, 0, 0});
}

TEST_P(Binary, WhereBroadcastsAllThree) {
  std::vector<double> c{1, 0, 1};         // [3,1]
  std::vector<double> a{1, 2, 3, 4};      // [1,4]
  std::vector<double> b{-7.5};            // []
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64, fx::i32})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    std::vector<double> bv = dt == fx::i32 ? std::vector<double>{-7} : b;
    auto f = jit([](Tensor cond, Tensor x, Tensor y) { return fx::where(cond, x, y); });
    Array r = f(make(fx::boolean, c, {3, 1}), make(dt, a, {1, 4}), make(dt, bv, {}));
    double o = bv[0];
    EXPECT_ARRAY(r, dt, {3, 4}, {1, 2, 3, 4, o, o, o, o, 1, 2, 3, 4});
  }
  // Random cond [2,1,4], a [3,1], b [4].
  std::vector<double> cv = random_values(fx::boolean, 8, 0, 1, 11);
  std::vector<double> av = random_values(fx::f32, 3, -1, 1, 12);
  std::vector<double> bv2 = random_values(fx::f32, 4, -1, 1, 13);
  Shape s{2, 3, 4};
  std::vector<double> cb = broadcast_values(cv, {2, 1, 4}, s), ab = broadcast_values(av, {3, 1}, s),
                      bb = broadcast_values(bv2, {4}, s), want;
  for (size_t i = 0; i < cb.size(); ++i) want.push_back(cb[i] != 0 ? ab[i] : bb[i]);
  auto f = jit([](Tensor cond, Tensor x, Tensor y) { return fx::where(cond, x, y); });
  EXPECT_ARRAY(f(make(fx::boolean, cv, {2, 1, 4}), make(fx::f32, av, {3, 1}), make(fx::f32, bv2, {4})), fx::f32, s,
               want);
  // A scalar condition picks a whole branch.
  Array x = make(fx::f32, {1, 2, 3, 4, 5, 6}, {2, 3}), y = make(fx::f32, {-1, -2, -3, -4, -5, -6}, {2, 3});
  EXPECT_ARRAY(f(Array::scalar(true), x, y), fx::f32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_ARRAY(f(Array::scalar(false), x, y), fx::f32, {2, 3}, {-1, -2, -3, -4, -5, -6});
  // Bool branches; zero-size.
  EXPECT_ARRAY(f(make(fx::boolean, {1, 0}, {2}), make(fx::boolean, {1, 1}, {2}), make(fx::boolean, {0, 0}, {2})),
               fx::boolean, {2}, {1, 0});
  EXPECT_ARRAY(f(make(fx::boolean, {}, {0, 3}), make(fx::f32, {1, 2, 3}, {1, 3}), Array::scalar(0.0f)), fx::f32,
               {0, 3}, {});
}

TEST_P(Binary, WhereWithCppScalarBranches) {
  std::vector<double> x{-2, -0.5, 0, 0.5, 2, 3};
  for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
    SCOPED_TRACE(fx::dtype_name(dt));
    auto f = jit([](Tensor t) {
      return std::make_pair(fx::where(t > 0.0, t, 0.25), fx::where(t < 1.0, -1.5, t));
    });
    auto [p, q] = f(make(dt, x, {2, 3}));
    EXPECT_ARRAY(p, dt, {2, 3}, {0.25, 0.25, 0.25, 0.5, 2, 3});
    EXPECT_ARRAY(q, dt, {2, 3}, {-1.5, -1.5, -1.5, -1.5, 2, 3});
  }
  auto g = jit([](Tensor c, Tensor t) { return fx::where(c, t, 9.0); });
  EXPECT_ARRAY(g(make(fx::boolean, {1, 0, 1}, {3}), make(fx::i32, {4}, {1})), fx::i32, {3}, {4, 9, 4});
}

TEST_P(Binary, CastsBetweenAllDtypes) {
  FLUXION_REQUIRE_F64(backend());
  // Source values per dtype, as stored.
  auto source = [](DType t) -> std::vector<double> {
    switch (t) {
      case DType::f32:
      case DType::f64:
      case DType::f16:
      case DType::bf16: return round_all(t, {-2.7, -1, -0.5, -0.0, 0, 0.3, 0.5, 1, 2.7, 3, 1e6 + 0.75, -123456.9});
      case DType::i32: return {-3, -1, 0, 1, 2, 7, 16777217, -2147483647, 2147483647, 100, -100, 42};
      case DType::boolean: return {0, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0};
    }
    return {};
  };
  auto convert = [](double v, DType to) {
    switch (to) {
      case DType::i32: return std::trunc(v);
      default: return round_to(to, v);
    }
  };
  const DType all[] = {fx::f32, fx::f64, fx::i32, fx::boolean};
  for (DType from : all) {
    for (DType to : all) {
      SCOPED_TRACE(std::string(fx::dtype_name(from)) + " -> " + fx::dtype_name(to));
      std::vector<double> x = source(from), want;
      for (double v : x) want.push_back(convert(v, to));
      auto f = jit([to](Tensor t) { return fx::cast(t, to); });
      EXPECT_ARRAY(f(make(from, x, {3, 4})), to, {3, 4}, want);
      // Rank 0 and zero-size.
      EXPECT_ARRAY(f(make(from, {x[1]}, {})), to, {}, {want[1]});
      EXPECT_ARRAY(f(make(from, {}, {0, 2})), to, {0, 2}, {});
    }
  }
  // Exact spot checks: truncation toward zero, f64 -> f32 rounding, NaN -> bool is true (x != 0).
  auto g = jit([](Tensor t) { return std::make_tuple(fx::cast(t, fx::i32), fx::cast(t, fx::f32), fx::cast(t, fx::boolean)); });
  auto [i, f, b] = g(make(fx::f64, {-2.99, 2.99, -0.1, 0.1, kNaN}, {5}));
  std::vector<double> iv = i.to_doubles();
  EXPECT_EQ(iv[0], -2);
  EXPECT_EQ(iv[1], 2);
  EXPECT_EQ(iv[2], 0);
  EXPECT_EQ(iv[3], 0);
  std::vector<float> fv = f.to_vector<float>();
  EXPECT_EQ(fv[3], 0.1f);
  EXPECT_EQ(fv[0], -2.99f);
  EXPECT_TRUE(std::isnan(fv[4]));
  EXPECT_ARRAY(b, fx::boolean, {5}, {1, 1, 1, 1, 1});
}
