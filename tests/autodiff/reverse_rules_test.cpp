// The reverse rule of every differentiable op against finite differences in f64, over shapes
// with broadcasting edge cases. Each loss weights the op's output by fixed random values so
// that every output element's adjoint differs.
#include "autodiff/gradcheck.h"
#include "common/test_names.h"

class Reverse : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Reverse);

namespace {
// sum(y * w) for fixed weights w shaped like y.
Tensor weighted(const Tensor& y) {
  std::vector<double> w = random_doubles(y.numel(), -1, 1, 99);
  return fx::sum(y * fx::constant(make(y.dtype(), w, y.shape())));
}
}  // namespace

TEST_P(Reverse, UnaryOps) {
  FLUXION_REQUIRE_F64(backend());
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.name);
    for (fx::Shape s : {fx::Shape{}, fx::Shape{5}, fx::Shape{2, 3}}) {
      auto op = c.op;
      expect_gradients_match(backend(), [op](Tensor x) { return weighted(op(x, fx::Loc::current())); },
                             uniform64(s, c.lo, c.hi, 1));
    }
  }
  // abs and relu on the negative side too.
  expect_gradients_match(backend(), [](Tensor x) { return weighted(fx::abs(x) + fx::relu(x)); }, uniform64({4}, -2, -0.1, 2));
}

TEST_P(Reverse, BinaryOpsWithBroadcasting) {
  FLUXION_REQUIRE_F64(backend());
  for (const BinaryCase& c : binary_cases()) {
    SCOPED_TRACE(c.name);
    for (auto [sa, sb] : broadcast_pairs()) {
      auto op = c.op;
      expect_gradients_match(backend(), [op](Tensor a, Tensor b) { return weighted(op(a, b, fx::Loc::current())); },
                             uniform64(sa, c.lo, c.hi, 3), uniform64(sb, c.lo, c.hi, 4));
    }
  }
  // pow's exponent derivative where the base is 0 is 0, not NaN.
  auto [v, g] = fx::jit(fx::value_and_grad([](Tensor a, Tensor b) { return fx::sum(fx::pow(a, b)); }, {0, 1}))(
      make(fx::f64, {0, 2}, {2}), make(fx::f64, {2, 2}, {2}));
  EXPECT_ARRAY(g[1], fx::f64, {2}, {0, 4 * std::log(2.0)});
}

TEST_P(Reverse, WhereAndScalars) {
  FLUXION_REQUIRE_F64(backend());
  expect_gradients_match(backend(), [](Tensor a, Tensor b) {
    return weighted(fx::where(a > 0.0, a * b, 2.0 - b) + a * 3.0 - 1.0 / b);
  }, uniform64({2, 3}, -1, 1, 5), uniform64({3}, 0.5, 2, 6));
}

TEST_P(Reverse, Reductions) {
  FLUXION_REQUIRE_F64(backend());
  Array x = uniform64({2, 3, 4}, -2, 2, 7);
  expect_gradients_match(backend(), [](Tensor x) { return weighted(fx::sum(x, {0, 2}, true)); }, x);
  expect_gradients_match(backend(), [](Tensor x) { return weighted(fx::mean(x, -1)); }, x);
  expect_gradients_match(backend(), [](Tensor x) { return weighted(fx::max(x, 1)) + weighted(fx::min(x, {0, 2})); }, x);
  expect_gradients_match(backend(), [](Tensor x) { return fx::max(x) * fx::sum(x); }, x);
}

TEST_P(Reverse, ReduceMaxSharesTiesEqually) {
  auto [v, g] = fx::jit(fx::value_and_grad([](Tensor x) { return fx::max(x); }))(make(fx::f64, {1, 3, 3, 0}, {4}));
  EXPECT_ARRAY(g[0], fx::f64, {4}, {0, 0.5, 0.5, 0});
  auto [v2, g2] = fx::jit(fx::value_and_grad([](Tensor a, Tensor b) { return fx::sum(fx::maximum(a, b)); }, {0, 1}))(
      make(fx::f64, {1, 2}, {2}), make(fx::f64, {1, 3}, {2}));
  EXPECT_ARRAY(g2[0], fx::f64, {2}, {1, 0});  // a tie goes to the first operand
  EXPECT_ARRAY(g2[1], fx::f64, {2}, {0, 1});
}

TEST_P(Reverse, Matmul) {
  FLUXION_REQUIRE_F64(backend());
  expect_gradients_match(backend(), [](Tensor a, Tensor b) { return weighted(fx::matmul(a, b)); },
                         uniform64({3, 4}, -1, 1, 8), uniform64({4, 2}, -1, 1, 9));
  expect_gradients_match(backend(), [](Tensor a, Tensor b) { return weighted(fx::matmul(a, b)); },
                         uniform64({2, 1, 3, 4}, -1, 1, 10), uniform64({5, 4, 2}, -1, 1, 11));
  expect_gradients_match(backend(), [](Tensor a, Tensor b) { return weighted(fx::matmul(a, b)); },
                         uniform64({4}, -1, 1, 12), uniform64({4, 3}, -1, 1, 13));
  expect_gradients_match(backend(), [](Tensor a, Tensor b) { return fx::dot(a, b); }, uniform64({5}, -1, 1, 14),
                         uniform64({5}, -1, 1, 15));
}

TEST_P(Reverse, ViewsAndDataMovement) {
  FLUXION_REQUIRE_F64(backend());
  Array x = uniform64({2, 3, 4}, -1, 1, 16);
  expect_gradients_match(backend(), [](Tensor x) { return weighted(fx::reshape(x, {4, -1})); }, x);
  expect_gradients_match(backend(), [](Tensor x) { return weighted(fx::permute(x, {2, 0, 1})); }, x);
  expect_gradients_match(backend(), [](Tensor x) { return weighted(fx::broadcast_to(fx::slice_axis(x, 1, 0, 1), {5, 2, 1, 4})); }, x);
  expect_gradients_match(backend(), [](Tensor x) { return weighted(fx::slice(x, {1, -2, 0}, {2, 3, 4}, {1, 1, 3})); }, x);
  expect_gradients_match(backend(), [](Tensor x) { return weighted(fx::pad(x, {{1, 0}, {0, 2}, {1, 1}})); }, x);
  expect_gradients_match(backend(), [](Tensor a, Tensor b) { return weighted(fx::concat({a, b, a}, 1)); }, x,
                         uniform64({2, 1, 4}, -1, 1, 17));
  expect_gradients_match(backend(), [](Tensor a, Tensor b) { return weighted(fx::stack({a, b}, 2)); },
                         uniform64({3, 2}, -1, 1, 18), uniform64({3, 2}, -1, 1, 19));
  expect_gradients_match(backend(), [](Tensor x) { return weighted(fx::transpose(x)); }, x);
}

TEST_P(Reverse, GatherAndTake) {
  FLUXION_REQUIRE_F64(backend());
  Array labels(std::vector<int32_t>{2, 0, 3}, {3});
  Array idx(std::vector<int32_t>{1, 1, 0, 5}, {2, 2});  // 5 is clamped to 2
  expect_gradients_match(backend(), [&](Tensor logits) { return weighted(fx::gather(logits, fx::constant(labels), 1)); },
                         uniform64({3, 4}, -1, 1, 20));
  expect_gradients_match(backend(), [&](Tensor table) { return weighted(fx::take(table, fx::constant(idx), 0)); },
                         uniform64({3, 2}, -1, 1, 21));
  expect_gradients_match(backend(), [&](Tensor x) { return weighted(fx::take(x, fx::constant(idx), 1)); },
                         uniform64({2, 3, 2}, -1, 1, 22));
}

TEST_P(Reverse, ScatterAdd) {
  FLUXION_REQUIRE_F64(backend());
  Array idx(std::vector<int32_t>{2, 0, 2, -1, 7}, {5});  // 2 repeated; -1 and 7 clamped to rows 0 and 3
  expect_gradients_match(
      backend(), [&](Tensor u) { return weighted(fx::scatter_add(u, fx::constant(idx), 4)); },
      uniform64({5, 3}, -1, 1, 40));
  expect_gradients_match(
      backend(), [&](Tensor u) { return weighted(fx::scatter_add(u, fx::constant(idx), 3, 1)); },
      uniform64({2, 5, 2}, -1, 1, 41));
  // Through a non-linear loss, and grad of grad: take's rule is scatter_add and scatter_add's take.
  auto f = [&](Tensor t) {
    return fx::sum(fx::sin(fx::take(t, fx::constant(idx), 1)) * fx::scatter_add(t, fx::constant(idx), 5, 1));
  };
  Array x = uniform64({2, 5}, -1, 1, 42);
  Array v = uniform64({2, 5}, -1, 1, 43);
  expect_gradients_match(backend(), f, x);
  expect_gradients_match(
      backend(), [&](Tensor t) { return fx::sum(fx::grad(f)(t)[0] * fx::constant(v)); }, x);
}

// The adjoints of take and gather are scatters: no one-hot matrix, no matmul, no comparison
// against an iota (an embedding table's gradient was a [count, rows] one-hot product).
TEST_P(Reverse, TakeAndGatherGradientsAreScatters) {
  FLUXION_REQUIRE_F64(backend());
  // The indices are arguments, so that the (linear) gradients are not folded into constants.
  Array idx(std::vector<int32_t>{3, 1, 3, 40}, {4});
  auto table = fx::jit(fx::grad([](Tensor t, Tensor i) { return weighted(fx::take(t, i, 0)); }, {0}), backend());
  std::string ir = table.lower(uniform64({20, 6}, -1, 1, 44), idx).ir();
  EXPECT_NE(ir.find("scatter_add"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("matmul"), std::string::npos) << ir;
  EXPECT_EQ(ir.find(" eq "), std::string::npos) << ir;
  Array labels(std::vector<int32_t>{2, 0, 5}, {3});
  auto picked = fx::jit(fx::grad([](Tensor x, Tensor i) { return weighted(fx::gather(x, i, 1)); }, {0}), backend());
  ir = picked.lower(uniform64({3, 4}, -1, 1, 45), labels).ir();
  EXPECT_NE(ir.find("scatter_add"), std::string::npos) << ir;
  EXPECT_EQ(ir.find(" eq "), std::string::npos) << ir;
  // Still the derivative, with the gathered axis not last and two-dimensional take indices.
  Array idx2(std::vector<int32_t>{1, 1, 0, 5, 2, -2}, {2, 3});
  Array pick(std::vector<int32_t>{1, 0, 2, 2, 0, 1, 3, 3}, {2, 2, 2});
  expect_gradients_match(
      backend(), [&](Tensor x) { return weighted(fx::gather(x, fx::constant(pick), 1)); },
      uniform64({2, 3, 2}, -1, 1, 46));
  expect_gradients_match(
      backend(), [&](Tensor x) { return weighted(fx::take(x, fx::constant(idx2), 1)); },
      uniform64({2, 4, 3}, -1, 1, 47));
}

TEST_P(Reverse, CompositeMlpWithCrossEntropy) {
  FLUXION_REQUIRE_F64(backend());
  // The W3 network at a small size, with a numerically stable softmax cross-entropy.
  Array labels(std::vector<int32_t>{1, 0, 2, 1}, {4});
  auto loss = [&](Tensor W1, Tensor b1, Tensor W2, Tensor b2, Tensor x) {
    Tensor h = fx::tanh(fx::matmul(W1, x) + b1);
    Tensor logits = fx::transpose(fx::matmul(W2, h) + b2);  // [batch, classes]
    Tensor m = fx::max(logits, 1, true);
    Tensor lse = fx::log(fx::sum(fx::exp(logits - m), 1)) + fx::squeeze(m, 1);
    return fx::mean(lse - fx::gather(logits, fx::constant(labels), 1));
  };
  expect_gradients_match(backend(), loss, uniform64({5, 6}, -0.5, 0.5, 23), uniform64({5, 1}, -0.1, 0.1, 24),
                         uniform64({3, 5}, -0.5, 0.5, 25), uniform64({3, 1}, -0.1, 0.1, 26),
                         uniform64({6, 4}, -1, 1, 27));
}

TEST_P(Reverse, GradOfGradAndHessianVectorProduct) {
  FLUXION_REQUIRE_F64(backend());
  // f(x) = sum(x^3 + sin x): grad = 3x^2 + cos x, and d/dx sum(grad * v) = (6x - sin x) * v.
  Array x = uniform64({4}, -1, 1, 28), v = uniform64({4}, -1, 1, 29);
  auto f = [](Tensor x) { return fx::sum(x * x * x + fx::sin(x)); };
  auto hvp = fx::jit(fx::grad([&](Tensor x, Tensor v) { return fx::sum(fx::grad(f)(x)[0] * v); }, {0}), backend());
  std::vector<double> xv = x.to_doubles(), vv = v.to_doubles(), want;
  for (size_t i = 0; i < 4; ++i) want.push_back((6 * xv[i] - std::sin(xv[i])) * vv[i]);
  EXPECT_ARRAY(hvp(x, v)[0], fx::f64, {4}, want);
  // The inner gradient itself passes the finite-difference check.
  expect_gradients_match(backend(), [&](Tensor x) { return fx::sum(fx::grad(f)(x)[0] * fx::constant(v)); }, x);
}

TEST_P(Reverse, CapturedTensorsAreConstants) {
  FLUXION_REQUIRE_F64(backend());
  // w is a Tensor of the enclosing function: grad with respect to x treats it as a constant.
  auto f = fx::jit([](Tensor x, Tensor w) {
    return fx::grad([&](Tensor x) { return fx::sum(x * w * w); })(x)[0];
  }, backend());
  EXPECT_ARRAY(f(make(fx::f64, {1, 2}, {2}), make(fx::f64, {3, -1}, {2})), fx::f64, {2}, {9, 1});
}

TEST_P(Reverse, TreeArgumentsGiveOneGradientPerLeaf) {
  FLUXION_REQUIRE_F64(backend());
  auto step = fx::jit(fx::value_and_grad([](std::vector<Tensor> p, Tensor x) {
    return fx::sum(fx::square(fx::matmul(p[0], x) + p[1]));
  }), backend());
  std::vector<Array> params{make(fx::f64, {1, 2, 3, 4}, {2, 2}), make(fx::f64, {1, -1}, {2})};
  auto [value, grads] = step(params, make(fx::f64, {1, 1}, {2}));
  // y = [3 + 1, 7 - 1] = [4, 6]; loss = 52; dy = 2y = [8, 12]; dW = dy x^T; db = dy.
  EXPECT_ARRAY(value, fx::f64, {}, {52});
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_ARRAY(grads[0], fx::f64, {2, 2}, {8, 8, 12, 12});
  EXPECT_ARRAY(grads[1], fx::f64, {2}, {8, 12});
}

TEST_P(Reverse, Conv2dOverStridePaddingDilationGroups) {
  FLUXION_REQUIRE_F64(backend());
  struct Case {
    fx::Conv2dOptions opt;
    int64_t c, o;
  };
  const Case cases[] = {
      {{}, 1, 2},
      {{.stride = {2, 1}, .padding = {1, 0, 2, 1}}, 2, 3},
      {{.stride = {1, 2}, .padding = {1}, .dilation = {2, 1}}, 2, 2},
      {{.stride = {2}, .padding = {0, 1}, .dilation = {1, 2}, .groups = 2}, 4, 6},
  };
  for (const Case& c : cases) {
    auto opt = c.opt;
    expect_gradients_match(backend(), [opt](Tensor x, Tensor w) { return weighted(fx::conv2d(x, w, opt)); },
                           uniform64({2, c.c, 6, 5}, -1, 1, 30), uniform64({c.o, c.c / c.opt.groups, 3, 2}, -1, 1, 31));
  }
}

TEST_P(Reverse, Conv2dStrideOneAcrossTilesAndPadding) {
  FLUXION_REQUIRE_F64(backend());
  // Stride 1 runs as sliding windows on the CPU: output channels not a multiple of the weight
  // gradient's 4-row tiles (6, 5, 3), taps not a multiple of its 6-tap tiles (25, 27, 6), and
  // padding on every side, up to more than the kernel reaches (the input gradient then starts
  // inside the output gradient).
  struct Case {
    fx::Conv2dOptions opt;
    fx::Shape x, w;
  };
  const Case cases[] = {
      {{}, {2, 1, 8, 7}, {6, 1, 5, 5}},
      {{.padding = {2}}, {1, 3, 5, 6}, {5, 3, 3, 3}},
      {{.padding = {3, 1, 0, 2}}, {1, 2, 5, 5}, {3, 2, 2, 3}},
  };
  uint32_t seed = 40;
  for (const Case& c : cases) {
    auto opt = c.opt;
    expect_gradients_match(backend(), [opt](Tensor x, Tensor w) { return weighted(fx::conv2d(x, w, opt)); },
                           uniform64(c.x, -1, 1, seed), uniform64(c.w, -1, 1, seed + 1));
    seed += 2;
  }
}

TEST_P(Reverse, Conv2dGradOfGrad) {
  FLUXION_REQUIRE_F64(backend());
  // d/dx and d/dw of sum(dL/dx * v), where dL/dx comes from conv2d's rule: exercises the rules of
  // conv2d_input_grad and conv2d_weight_grad.
  fx::Conv2dOptions opt{.stride = {2, 1}, .padding = {1}, .dilation = {1, 1}, .groups = 1};
  Array v = uniform64({1, 2, 5, 4}, -1, 1, 32);
  expect_gradients_match(backend(), [&](Tensor x, Tensor w) {
    auto g = fx::grad([&](Tensor x, Tensor w) { return weighted(fx::conv2d(x, w, opt)); }, {0, 1})(x, w);
    return fx::sum(g[0] * fx::constant(v)) + fx::sum(g[1] * g[1]);
  }, uniform64({1, 2, 5, 4}, -1, 1, 33), uniform64({3, 2, 3, 3}, -1, 1, 34));
}

TEST_P(Reverse, Pooling) {
  FLUXION_REQUIRE_F64(backend());
  // Distinct values so that each window has one maximum (max pooling's derivative is
  // undefined at ties).
  std::vector<double> xs(2 * 3 * 5 * 4);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(1.7 * static_cast<double>(i) + 0.3);
  Array x = make(fx::f64, xs, {2, 3, 5, 4});
  expect_gradients_match(backend(), [](Tensor x) { return weighted(fx::max_pool2d(x, {.window = {2, 2}})); }, x);
  expect_gradients_match(backend(), [](Tensor x) {
    return weighted(fx::max_pool2d(x, {.window = {3, 2}, .stride = {2, 1}, .padding = {1, 0}}));
  }, x);
  expect_gradients_match(backend(), [](Tensor x) {
    return weighted(fx::avg_pool2d(x, {.window = {2, 3}, .stride = {1, 2}, .padding = {1}}));
  }, x);
  // avg pooling's gradient is linear, so it can be differentiated again.
  expect_gradients_match(backend(), [](Tensor x) {
    Tensor g = fx::grad([](Tensor x) { return weighted(fx::avg_pool2d(x, {.window = {2, 2}})); })(x)[0];
    return fx::sum(g * x * x);
  }, x);
}

TEST_P(Reverse, StopGradientBlocksTheFlowAndLeavesNoTrace) {
  FLUXION_REQUIRE_F64(backend());
  // d/dx [x * stop_gradient(x)] = stop_gradient(x) = x, not 2x.
  auto f = fx::jit(fx::grad([](Tensor x) { return fx::sum(x * fx::stop_gradient(x) + fx::stop_gradient(fx::exp(x))); }),
                   backend());
  EXPECT_ARRAY(f(make(fx::f64, {1, -2}, {2}))[0], fx::f64, {2}, {1, -2});
  std::string ir = f.lower(make(fx::f64, {1, -2}, {2})).ir();
  EXPECT_EQ(ir.find("stop_gradient"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("exp"), std::string::npos) << "the stopped branch is dead in the gradient program:\n" << ir;
}

TEST_P(Reverse, MaxPoolingGradOfGrad) {
  FLUXION_REQUIRE_F64(backend());
  std::vector<double> xs(1 * 2 * 4 * 4);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = std::sin(1.3 * static_cast<double>(i) + 0.2);
  Array v = uniform64({1, 2, 4, 4}, -1, 1, 40);
  expect_gradients_match(backend(), [&](Tensor x) {
    Tensor g = fx::grad([](Tensor x) { return weighted(fx::max_pool2d(x * x, {.window = {2, 2}})); })(x)[0];
    return fx::sum(g * fx::constant(v));
  }, make(fx::f64, xs, {1, 2, 4, 4}));
}

TEST_P(Reverse, CustomVjpReplacesDifferentiatingTheBody) {
  FLUXION_REQUIRE_F64(backend());
  // log(1 + exp(x)) overflows for large x; the custom rule gives its derivative sigmoid(x)
  // directly. A deliberately different rule (3 * sigmoid) shows that the rule, not the body, is
  // differentiated.
  auto softplus_naive = fx::custom_vjp([](Tensor x) { return fx::log(1.0 + fx::exp(x)); },
                                       [](Tensor x, Tensor, Tensor g) { return std::vector<Tensor>{g * fx::sigmoid(x) * 3.0}; });
  auto f = fx::jit(fx::value_and_grad([&](Tensor x) { return fx::sum(softplus_naive(x)); }), backend());
  Array x = make(fx::f64, {-1, 0, 2}, {3});
  auto [v, g] = f(x);
  std::vector<double> want;
  for (double xi : {-1.0, 0.0, 2.0}) want.push_back(3 / (1 + std::exp(-xi)));
  EXPECT_ARRAY(g[0], fx::f64, {3}, want);
  std::string ir = f.lower(x).ir();
  EXPECT_NE(ir.find("sigmoid"), std::string::npos) << ir;
  // The body's own derivative (exp's and log's adjoints: a division by 1 + exp(x)) is absent.
  EXPECT_EQ(ir.find(" = div "), std::string::npos) << ir;
}

TEST_P(Reverse, CustomVjpInsideALoopWithCaptures) {
  FLUXION_REQUIRE_F64(backend());
  // The rule is used at every step of a loop, and may use Tensors of the enclosing function.
  auto loss = [](Tensor x, Tensor w) {
    auto scaled_tanh = fx::custom_vjp([&](Tensor s) { return fx::tanh(s * w); },
                                      [&](Tensor, Tensor y, Tensor g) { return std::vector<Tensor>{g * (1.0 - y * y) * w}; });
    return fx::sum(fx::fori_loop(0, 5, [&](Tensor, Tensor s) { return scaled_tanh(s) + x; }, x));
  };
  // The rule is the true derivative with respect to s (w is a constant of the rule), so the
  // gradient with respect to x matches finite differences.
  Array w = uniform64({3}, -1, 1, 41);
  expect_gradients_match(backend(), [&](Tensor x) { return loss(x, fx::constant(w)); }, uniform64({3}, -1, 1, 42));
}

TEST_P(Reverse, VjpPullbackOfAVectorFunction) {
  FLUXION_REQUIRE_F64(backend());
  // pullback(g) = g^T J, checked against grad of sum(f * g); two adjoints through one pullback.
  auto f = [](Tensor W, Tensor x) { return fx::tanh(fx::matmul(W, x)); };
  Array W = uniform64({3, 4}, -1, 1, 50), x = uniform64({4, 2}, -1, 1, 51);
  Array g1 = uniform64({3, 2}, -1, 1, 52), g2 = uniform64({3, 2}, -1, 1, 53);
  auto pulled = fx::jit([&](Tensor W, Tensor x, Tensor g1, Tensor g2) {
    auto [y, pullback] = fx::vjp(f, {0, 1})(W, x);
    std::vector<Tensor> a = pullback(g1), b = pullback(g2);
    return std::make_tuple(y, a[0], a[1], b[0]);
  }, backend());
  auto [y, dW1, dx1, dW2] = pulled(W, x, g1, g2);
  auto ref = fx::jit([&](Tensor W, Tensor x, Tensor g) {
    return fx::grad([&](Tensor W, Tensor x) { return fx::sum(f(W, x) * g); }, {0, 1})(W, x);
  }, backend());
  std::vector<Array> r1 = ref(W, x, g1), r2 = ref(W, x, g2);
  EXPECT_ARRAY(dW1, fx::f64, {3, 4}, r1[0].to_doubles());
  EXPECT_ARRAY(dx1, fx::f64, {4, 2}, r1[1].to_doubles());
  EXPECT_ARRAY(dW2, fx::f64, {3, 4}, r2[0].to_doubles());
  // The forward computation is shared: one tanh in the simplified program.
  std::string ir = pulled.lower(W, x, g1, g2).ir();
  EXPECT_EQ(ir.find(" = tanh "), ir.rfind(" = tanh ")) << ir;
}

TEST_P(Reverse, CustomRulesLeaveNoTraceAfterSimplify) {
  FLUXION_REQUIRE_F64(backend());
  // Once differentiation is done, custom_vjp/custom_jvp nodes are replaced by their primal.
  auto f = fx::custom_vjp([](Tensor x) { return fx::exp(x) * 2.0; },
                          [](Tensor, Tensor y, Tensor g) { return std::vector<Tensor>{g * y}; });
  auto h = fx::custom_jvp([](Tensor x) { return fx::sin(x); }, [](Tensor x, Tensor t) { return t * fx::cos(x); });
  auto step = fx::jit(fx::value_and_grad([&](Tensor x) { return fx::sum(f(x) + h(x)); }), backend());
  Array x = make(fx::f64, {0.5, -1}, {2});
  fx::Compiled c = step.lower(x);
  EXPECT_NE(c.traced_ir().find("custom_vjp"), std::string::npos);
  EXPECT_EQ(c.ir().find("custom_"), std::string::npos) << c.ir();
  auto [v, g] = step(x);
  EXPECT_ARRAY(g[0], fx::f64, {2}, {2 * std::exp(0.5) + std::cos(0.5), 2 * std::exp(-1.0) + std::cos(-1.0)});
}
