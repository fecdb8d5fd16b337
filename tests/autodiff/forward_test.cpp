// Forward mode (jvp) against central finite differences along the tangent direction, for op
// families, loops and branches; and jvp of grad as a Hessian-vector product.
#include "autodiff/gradcheck.h"
#include "common/test_names.h"

class Forward : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Forward);

namespace {

using VecFn = std::function<Tensor(std::vector<Tensor>)>;

// jvp(f)(x; v) against (f(x + h v) - f(x - h v)) / 2h, elementwise, for random directions v.
void expect_jvp_matches(fx::Backend backend, const VecFn& f, const std::vector<Array>& x) {
  std::vector<Array> v;
  for (size_t i = 0; i < x.size(); ++i) v.push_back(uniform64(x[i].shape(), -1, 1, 100 + static_cast<uint32_t>(i)));
  auto jf = fx::jit([&](std::vector<Tensor> xs, std::vector<Tensor> ts) {
    auto [y, ty] = fx::jvp(f, std::make_tuple(xs), ts);
    return std::make_pair(y, ty);
  }, backend);
  auto [y, ty] = jf(x, v);
  auto plain = fx::jit([&](std::vector<Tensor> xs) { return f(xs); }, fx::Backend::Interp);
  EXPECT_ARRAY(y, fx::f64, plain(x).shape(), plain(x).to_doubles());
  const double h = 1e-6;
  auto shifted = [&](double s) {
    std::vector<Array> xs;
    for (size_t i = 0; i < x.size(); ++i) {
      std::vector<double> a = x[i].to_doubles(), d = v[i].to_doubles();
      for (size_t j = 0; j < a.size(); ++j) a[j] += s * h * d[j];
      xs.push_back(make(fx::f64, a, x[i].shape()));
    }
    return plain(xs).to_doubles();
  };
  std::vector<double> up = shifted(1), down = shifted(-1), got = ty.to_doubles();
  ASSERT_EQ(got.size(), up.size());
  for (size_t j = 0; j < got.size(); ++j) {
    double fd = (up[j] - down[j]) / (2 * h);
    EXPECT_NEAR(got[j], fd, kGradRel * std::abs(fd) + kGradAbs) << "element " << j;
  }
}

}  // namespace

TEST_P(Forward, UnaryOps) {
  FLUXION_REQUIRE_F64(backend());
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    for (fx::Shape s : {fx::Shape{}, fx::Shape{5}, fx::Shape{2, 3}}) {
      auto op = c.op;
      expect_jvp_matches(backend(), [op](std::vector<Tensor> x) { return op(x[0], fx::Loc::current()); },
                         {uniform64(s, c.lo, c.hi, 30)});
    }
  }
}

TEST_P(Forward, BinaryOpsWithBroadcasting) {
  FLUXION_REQUIRE_F64(backend());
  for (const BinaryCase& c : binary_cases()) {
    SCOPED_TRACE(c.name);
    for (auto [sa, sb] : broadcast_pairs()) {
      auto op = c.op;
      expect_jvp_matches(backend(), [op](std::vector<Tensor> x) { return op(x[0], x[1], fx::Loc::current()); },
                         {uniform64(sa, c.lo, c.hi, 31), uniform64(sb, c.lo, c.hi, 32)});
    }
  }
}

TEST_P(Forward, ElementwiseChains) {
  FLUXION_REQUIRE_F64(backend());
  expect_jvp_matches(backend(), [](std::vector<Tensor> x) {
    Tensor a = x[0], b = x[1];
    Tensor y = fx::sin(a) * fx::exp(b) / (1.0 + a * a) + fx::atan2(a, b) + fx::pow(fx::abs(b) + 0.5, a);
    return fx::where(a > 0.0, y, fx::tanh(y)) + fx::sigmoid(b) * fx::softplus(a) - fx::maximum(a, b) + fx::erf(b);
  }, {uniform64({2, 3}, -1, 1, 1), uniform64({3}, 0.2, 1, 2)});
}

TEST_P(Forward, ReductionsMatmulAndViews) {
  FLUXION_REQUIRE_F64(backend());
  expect_jvp_matches(backend(), [](std::vector<Tensor> x) {
    Tensor m = fx::matmul(x[0], x[1]);  // [3, 2]
    Tensor v = fx::concat({fx::slice_axis(m, 1, 1, 2), fx::pad(m, {{0, 0}, {1, 0}}) * 2.0 * fx::max(m)}, 1);
    return fx::sum(v, 1) + fx::mean(fx::transpose(m), 0) + fx::min(m, 1);
  }, {uniform64({3, 4}, -1, 1, 3), uniform64({4, 2}, -1, 1, 4)});
  Array labels(std::vector<int32_t>{1, 0, 2}, {3});
  expect_jvp_matches(backend(), [&](std::vector<Tensor> x) {
    return fx::gather(x[0], fx::constant(labels), 1) + fx::sum(fx::take(x[0], fx::constant(labels), 1), 1);
  }, {uniform64({3, 4}, -1, 1, 5)});
}

TEST_P(Forward, ScatterAdd) {
  FLUXION_REQUIRE_F64(backend());
  Array idx(std::vector<int32_t>{2, 0, 2, -1, 7}, {5});  // repeated and clamped indices
  expect_jvp_matches(backend(),
                     [&](std::vector<Tensor> x) {
                       return fx::scatter_add(x[0] * x[0], fx::constant(idx), 4) +
                              fx::sum(fx::scatter_add(x[1], fx::constant(idx), 4, 1), 0);
                     },
                     {uniform64({5, 3}, -1, 1, 6), uniform64({2, 5, 3}, -1, 1, 7)});
}

TEST_P(Forward, ConvAndAveragePooling) {
  FLUXION_REQUIRE_F64(backend());
  expect_jvp_matches(backend(), [](std::vector<Tensor> x) {
    Tensor c = fx::conv2d(x[0], x[1], {.stride = {2, 1}, .padding = {1}, .groups = 2});
    return fx::avg_pool2d(fx::tanh(c), {.window = {2, 2}, .stride = {1, 1}});
  }, {uniform64({1, 4, 6, 5}, -1, 1, 6), uniform64({2, 2, 3, 3}, -1, 1, 7)});
}

TEST_P(Forward, ScanWhileAndCond) {
  FLUXION_REQUIRE_F64(backend());
  expect_jvp_matches(backend(), [](std::vector<Tensor> x) {
    auto [h, ys] = fx::scan([&](Tensor h, Tensor xi) {
      Tensor next = fx::tanh(fx::matmul(x[0], h) + xi);
      return std::make_pair(next, fx::sum(next * next));
    }, x[1], x[2]);
    Tensor w = fx::while_loop([](Tensor s) { return fx::sum(s) < 5.0; }, [&](Tensor s) { return s * 1.5 + 0.25; },
                              fx::abs(h) + 0.1, 50);
    Tensor c = fx::cond(fx::sum(w) > 0.0, [&] { return w * fx::sum(ys); }, [&] { return -w; });
    return fx::concat({c, ys});
  }, {uniform64({3, 3}, -0.5, 0.5, 8), uniform64({3}, -1, 1, 9), uniform64({4, 3}, -1, 1, 10)});
}

TEST_P(Forward, JvpOfGradIsAHessianVectorProduct) {
  FLUXION_REQUIRE_F64(backend());
  // f = sum(x^3) * sum(x): H = 6 diag(x) sum(x) + 3x^2 1^T + 1 (3x^2)^T.
  auto f = [](Tensor x) { return fx::sum(x * x * x) * fx::sum(x); };
  auto hvp = fx::jit([&](Tensor x, Tensor v) {
    return fx::jvp([&](Tensor x) { return fx::grad(f)(x)[0]; }, std::make_tuple(x), {v}).second;
  }, backend());
  Array x = uniform64({3}, -1, 1, 11), v = uniform64({3}, -1, 1, 12);
  std::vector<double> xs = x.to_doubles(), vs = v.to_doubles(), want(3);
  double s = xs[0] + xs[1] + xs[2], dot3 = 0, sv = vs[0] + vs[1] + vs[2];
  for (size_t i = 0; i < 3; ++i) dot3 += 3 * xs[i] * xs[i] * vs[i];
  for (size_t i = 0; i < 3; ++i) want[i] = 6 * xs[i] * s * vs[i] + 3 * xs[i] * xs[i] * sv + dot3;
  EXPECT_ARRAY(hvp(x, v), fx::f64, {3}, want);
}

TEST(ForwardErrors, TangentTypesAreChecked) {
  EXPECT_THROW(fx::jit([](Tensor x, Tensor v) { return fx::jvp([](Tensor x) { return x * 2.0; }, std::make_tuple(x), {v}).second; })
                   .lower(Array(fx::DType::f32, {3}), Array(fx::DType::f32, {4})),
               fx::Error);
}

TEST_P(Forward, MaxPooling) {
  FLUXION_REQUIRE_F64(backend());
  std::vector<double> xs(2 * 2 * 5 * 4);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(1.7 * static_cast<double>(i) + 0.3);  // no ties
  expect_jvp_matches(backend(), [](std::vector<Tensor> x) {
    return fx::max_pool2d(x[0] * x[0], {.window = {3, 2}, .stride = {2, 1}, .padding = {1, 0}});
  }, {make(fx::f64, xs, {2, 2, 5, 4})});
}

TEST_P(Forward, CustomJvpRuleIsUsedInBothModes) {
  FLUXION_REQUIRE_F64(backend());
  // A deliberately different rule (tangent 2 t, not the true cos(x) t) shows which is used:
  // forward mode applies it, reverse mode its transpose.
  auto f = fx::custom_jvp([](Tensor x) { return fx::sin(x); }, [](Tensor, Tensor t) { return t * 2.0; });
  Array x = make(fx::f64, {0.5, -1}, {2}), v = make(fx::f64, {1, 3}, {2});
  auto fwd = fx::jit([&](Tensor x, Tensor v) { return fx::jvp(f, std::make_tuple(x), {v}).second; }, backend());
  EXPECT_ARRAY(fwd(x, v), fx::f64, {2}, {2, 6});
  auto rev = fx::jit(fx::grad([&](Tensor x) { return fx::sum(f(x) * fx::constant(v)); }), backend());
  EXPECT_ARRAY(rev(x)[0], fx::f64, {2}, {2, 6});
  // With the true rule, gradients inside a loop with a captured weight pass finite differences.
  auto g = fx::custom_jvp([](Tensor x) { return fx::log1p(fx::exp(x)); },
                          [](Tensor x, Tensor t) { return t * fx::sigmoid(x); });
  expect_gradients_match(backend(), [&](Tensor x, Tensor w) {
    return fx::sum(fx::fori_loop(0, 3, [&](Tensor, Tensor s) { return g(s * w); }, x));
  }, uniform64({3}, -1, 1, 60), uniform64({3}, -1, 1, 61));
}
