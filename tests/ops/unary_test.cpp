// Elementwise unary ops: every float op in f32 and f64 over several shapes (rank 0, size-1
// dims, zero-size), hand-picked special values, the numeric ops on i32, logical_not on bool.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/test_names.h"

namespace {

struct UnaryCase {
  const char* name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo, hi;  // input domain for random values
  Tol tol;
};

double sign_ref(double x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
double softplus_ref(double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x))); }
double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }

std::vector<UnaryCase> float_cases() {
  return {
      {"neg", [](const Tensor& x) { return fx::neg(x); }, [](double x) { return -x; }, -3, 3, Tol::arith()},
      {"operator-", [](const Tensor& x) { return -x; }, [](double x) { return -x; }, -3, 3, Tol::arith()},
      {"abs", [](const Tensor& x) { return fx::abs(x); }, [](double x) { return std::abs(x); }, -3, 3, Tol::arith()},
      {"sign", [](const Tensor& x) { return fx::sign(x); }, sign_ref, -3, 3, Tol::arith()},
      {"square", [](const Tensor& x) { return fx::square(x); }, [](double x) { return x * x; }, -3, 3, Tol::arith()},
      {"relu", [](const Tensor& x) { return fx::relu(x); }, [](double x) { return std::max(x, 0.0); }, -3, 3,
       Tol::arith()},
      {"exp", [](const Tensor& x) { return fx::exp(x); }, [](double x) { return std::exp(x); }, -5, 5, Tol::trans()},
      {"expm1", [](const Tensor& x) { return fx::expm1(x); }, [](double x) { return std::expm1(x); }, -2, 2,
       Tol::trans()},
      {"log", [](const Tensor& x) { return fx::log(x); }, [](double x) { return std::log(x); }, 0.01, 10,
       Tol::trans()},
      {"log1p", [](const Tensor& x) { return fx::log1p(x); }, [](double x) { return std::log1p(x); }, -0.9, 5,
       Tol::trans()},
      {"sqrt", [](const Tensor& x) { return fx::sqrt(x); }, [](double x) { return std::sqrt(x); }, 0, 10,
       Tol::trans()},
      {"rsqrt", [](const Tensor& x) { return fx::rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, 0.01, 10,
       Tol::trans()},
      {"sin", [](const Tensor& x) { return fx::sin(x); }, [](double x) { return std::sin(x); }, -6, 6, Tol::trans()},
      {"cos", [](const Tensor& x) { return fx::cos(x); }, [](double x) { return std::cos(x); }, -6, 6, Tol::trans()},
      {"tanh", [](const Tensor& x) { return fx::tanh(x); }, [](double x) { return std::tanh(x); }, -4, 4,
       Tol::trans()},
      {"sigmoid", [](const Tensor& x) { return fx::sigmoid(x); }, sigmoid_ref, -8, 8, Tol::trans()},
      {"softplus", [](const Tensor& x) { return fx::softplus(x); }, softplus_ref, -20, 20, Tol::trans()},
      {"erf", [](const Tensor& x) { return fx::erf(x); }, [](double x) { return std::erf(x); }, -3, 3, Tol::trans()},
      {"floor", [](const Tensor& x) { return fx::floor(x); }, [](double x) { return std::floor(x); }, -5, 5,
       Tol::arith()},
  };
}

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s{{}, {7}, {1, 1}, {2, 1, 3}, {0, 3}, {4, 5}, {3, 0, 2}};
  return s;
}

std::vector<double> apply(const std::vector<double>& x, const std::function<double(double)>& f, DType dt) {
  std::vector<double> y;
  for (double v : x) y.push_back(round_to(dt, f(v)));
  return y;
}

}  // namespace

class Unary : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Unary);

TEST_P(Unary, FloatOpsOverShapesAndDtypes) {
  uint32_t seed = 1;
  for (const UnaryCase& c : float_cases()) {
    for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
      for (const Shape& s : shapes()) {
        SCOPED_TRACE(std::string(c.name) + " " + fx::dtype_name(dt) + str(s));
        std::vector<double> x = random_values(dt, count(s), c.lo, c.hi, seed++);
        auto f = jit([op = c.op](Tensor t) { return op(t); });
        Array y = f(make(dt, x, s));
        EXPECT_ARRAY(y, dt, s, apply(x, c.ref, dt), c.tol);
      }
    }
  }
}

// Values at the edges of each op's definition: zeros, exact integers, saturation.
TEST_P(Unary, FloatOpsSpecialValues) {
  FLUXION_REQUIRE_F64(backend());
  struct Special {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::vector<double> in, want;
  };
  const double s100 = std::exp(-100.0);  // sigmoid(-100) = softplus(-100) to 1e-44 relative
  std::vector<Special> cases{
      {"sign", [](const Tensor& x) { return fx::sign(x); }, {-2, -0.0, 0, 3.5, 1e-30, -1e-30}, {-1, 0, 0, 1, 1, -1}},
      {"abs", [](const Tensor& x) { return fx::abs(x); }, {-2, -0.0, 0, 3.5}, {2, 0, 0, 3.5}},
      {"relu", [](const Tensor& x) { return fx::relu(x); }, {-1, -0.0, 0, 2.5}, {0, 0, 0, 2.5}},
      {"floor", [](const Tensor& x) { return fx::floor(x); }, {-2.5, -2, -0.5, 0, 0.5, 2.999, 3},
       {-3, -2, -1, 0, 0, 2, 3}},
      {"softplus", [](const Tensor& x) { return fx::softplus(x); }, {-100, -20, 0, 20, 100},
       {s100, softplus_ref(-20), std::log(2.0), softplus_ref(20), 100}},
      {"sigmoid", [](const Tensor& x) { return fx::sigmoid(x); }, {-100, 0, 100}, {sigmoid_ref(-100), 0.5, 1}},
      {"tanh", [](const Tensor& x) { return fx::tanh(x); }, {-kInf, -30, 0, 30, kInf}, {-1, -1, 0, 1, 1}},
      {"exp", [](const Tensor& x) { return fx::exp(x); }, {-kInf, 0, kInf}, {0, 1, kInf}},
      {"log", [](const Tensor& x) { return fx::log(x); }, {0, 1, -1, kInf}, {-kInf, 0, kNaN, kInf}},
      {"log1p", [](const Tensor& x) { return fx::log1p(x); }, {-1, 0, -2}, {-kInf, 0, kNaN}},
      {"sqrt", [](const Tensor& x) { return fx::sqrt(x); }, {0, 4, -1, kInf}, {0, 2, kNaN, kInf}},
      {"rsqrt", [](const Tensor& x) { return fx::rsqrt(x); }, {0, 4, 0.25}, {kInf, 0.5, 2}},
      {"erf", [](const Tensor& x) { return fx::erf(x); }, {-kInf, 0, 10, kInf}, {-1, 0, 1, 1}},
      {"sin", [](const Tensor& x) { return fx::sin(x); }, {0, kNaN}, {0, kNaN}},
      {"exp nan", [](const Tensor& x) { return fx::exp(x); }, {kNaN}, {kNaN}},
      {"neg nan", [](const Tensor& x) { return fx::neg(x); }, {kNaN, kInf}, {kNaN, -kInf}},
  };
  for (const Special& c : cases) {
    for (DType dt : fx::testing::dtypes_on(backend(), {fx::f32, fx::f64})) {
      SCOPED_TRACE(std::string(c.name) + " " + fx::dtype_name(dt));
      Shape s{static_cast<int64_t>(c.in.size())};
      auto f = jit([op = c.op](Tensor t) { return op(t); });
      EXPECT_ARRAY(f(make(dt, c.in, s)), dt, s, round_all(dt, c.want), Tol::trans());
    }
  }
  // Rank-0 operands.
  auto f = jit([](Tensor t) { return fx::sign(t); });
  EXPECT_ARRAY(f(Array::scalar(0.0)), fx::f64, {}, {0});
  EXPECT_ARRAY(f(Array::scalar(-3.0f)), fx::f32, {}, {-1});
}

TEST_P(Unary, IntegerOps) {
  struct IntCase {
    const char* name;
    std::function<Tensor(const Tensor&)> op;
    std::function<double(double)> ref;
  };
  std::vector<IntCase> cases{
      {"neg", [](const Tensor& x) { return fx::neg(x); }, [](double x) { return -x; }},
      {"operator-", [](const Tensor& x) { return -x; }, [](double x) { return -x; }},
      {"abs", [](const Tensor& x) { return fx::abs(x); }, [](double x) { return std::abs(x); }},
      {"sign", [](const Tensor& x) { return fx::sign(x); }, sign_ref},
      {"square", [](const Tensor& x) { return fx::square(x); }, [](double x) { return x * x; }},
      {"relu", [](const Tensor& x) { return fx::relu(x); }, [](double x) { return std::max(x, 0.0); }},
  };
  uint32_t seed = 100;
  for (const IntCase& c : cases) {
    for (const Shape& s : shapes()) {
      SCOPED_TRACE(std::string(c.name) + " i32" + str(s));
      std::vector<double> x = random_ints(count(s), -50, 50, seed++);
      if (!x.empty()) x[0] = 0;  // 0 in every non-empty case (sign(0) = 0, relu(0) = 0)
      auto f = jit([op = c.op](Tensor t) { return op(t); });
      EXPECT_ARRAY(f(make(fx::i32, x, s)), fx::i32, s, apply(x, c.ref, fx::i32));
    }
    // Large magnitudes stay exact in i32.
    SCOPED_TRACE(std::string(c.name) + " i32 large");
    std::vector<double> big{-40000, 40000, 1, -1, 46340, -46340};
    auto f = jit([op = c.op](Tensor t) { return op(t); });
    EXPECT_ARRAY(f(make(fx::i32, big, {6})), fx::i32, {6}, apply(big, c.ref, fx::i32));
  }
}

TEST_P(Unary, LogicalNotOnBool) {
  for (const Shape& s : shapes()) {
    SCOPED_TRACE("not bool" + str(s));
    std::vector<double> x = random_ints(count(s), 0, 1, 7);
    std::vector<double> want;
    for (double v : x) want.push_back(v != 0 ? 0 : 1);
    auto f = jit([](Tensor t) { return fx::logical_not(t); });
    EXPECT_ARRAY(f(make(fx::boolean, x, s)), fx::boolean, s, want);
    auto g = jit([](Tensor t) { return !t; });
    EXPECT_ARRAY(g(make(fx::boolean, x, s)), fx::boolean, s, want);
  }
  auto f = jit([](Tensor t) { return fx::logical_not(t); });
  EXPECT_ARRAY(f(make(fx::boolean, {1, 0}, {2})), fx::boolean, {2}, {0, 1});
}

// A chain of unary ops rounds to f32 after each op; the result stays within the f32 tolerance
// of the double-precision chain.
TEST_P(Unary, ChainOfOps) {
  std::vector<double> x = random_values(fx::f32, 12, -2, 2, 55);
  auto f = jit([](Tensor t) { return fx::tanh(fx::exp(fx::sin(t)) - fx::square(t)); });
  std::vector<double> want;
  for (double v : x) want.push_back(std::tanh(std::exp(std::sin(v)) - v * v));
  EXPECT_ARRAY(f(make(fx::f32, x, {3, 4})), fx::f32, {3, 4}, want, Tol::trans());
}
