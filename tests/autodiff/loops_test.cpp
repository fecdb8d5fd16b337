// Reverse mode through scan and fori_loop against finite differences: carries, per-step inputs
// and outputs, captured values, reverse scans, nesting, and grad of grad through a loop.
#include "autodiff/gradcheck.h"
#include "common/test_names.h"

class ReverseLoops : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(ReverseLoops);

TEST_P(ReverseLoops, ForiLoopThroughCarryAndCaptures) {
  FLUXION_REQUIRE_F64(backend());
  // s <- s * w + x, 6 times: the gradient reaches s0 through the carry and w, x through captures.
  expect_gradients_match(backend(), [](Tensor s0, Tensor w, Tensor x) {
    Tensor s = fx::fori_loop(0, 6, [&](Tensor, Tensor s) { return fx::tanh(s * w + x); }, s0);
    return fx::sum(s * s);
  }, uniform64({3}, -1, 1, 1), uniform64({3}, -1, 1, 2), uniform64({3}, -1, 1, 3));
}

TEST_P(ReverseLoops, ScanRnnWithPerStepInputsAndOutputs) {
  FLUXION_REQUIRE_F64(backend());
  auto loss = [](Tensor W, Tensor U, Tensor h0, Tensor xs) {
    auto [h, ys] = fx::scan([&](Tensor h, Tensor x) {
      Tensor next = fx::tanh(fx::matmul(W, h) + fx::matmul(U, x));
      return std::make_pair(next, fx::sum(next * next));
    }, h0, xs);
    return fx::sum(ys) + fx::sum(h);
  };
  expect_gradients_match(backend(), loss, uniform64({4, 4}, -0.5, 0.5, 4), uniform64({4, 3}, -0.5, 0.5, 5),
                         uniform64({4}, -1, 1, 6), uniform64({5, 3}, -1, 1, 7));
}

TEST_P(ReverseLoops, ReverseScanAndIntegerCarry) {
  FLUXION_REQUIRE_F64(backend());
  // A reverse scan with an i32 counter carried beside the float state.
  auto loss = [](Tensor s0, Tensor xs) {
    using C = std::pair<Tensor, Tensor>;
    auto [c, ys] = fx::scan([](C c, Tensor x) {
      Tensor s = c.first * fx::cast(c.second, fx::f64) * 0.1 + fx::sin(x);
      return std::make_pair(C{s, c.second + 1}, s * x);
    }, C{s0, fx::scalar(1, fx::i32)}, xs, {.reverse = true});
    return fx::sum(ys) + c.first;
  };
  expect_gradients_match(backend(), loss, uniform64({}, -1, 1, 8), uniform64({7}, -1, 1, 9));
}

TEST_P(ReverseLoops, NestedLoops) {
  FLUXION_REQUIRE_F64(backend());
  expect_gradients_match(backend(), [](Tensor w, Tensor s0) {
    Tensor s = fx::fori_loop(0, 3, [&](Tensor, Tensor s) {
      return fx::fori_loop(0, 2, [&](Tensor, Tensor t) { return fx::sin(t * w) + s * 0.5; }, s);
    }, s0);
    return fx::sum(s);
  }, uniform64({2}, -1, 1, 10), uniform64({2}, -1, 1, 11));
}

TEST_P(ReverseLoops, SmallLoopOfW7) {
  FLUXION_REQUIRE_F64(backend());
  // W7's loop at 50 steps: s <- sigmoid(softplus(w2) . sigmoid(s * softplus(w1))) + noise[i].
  Array noise = uniform64({50}, -0.01, 0.01, 12);
  expect_gradients_match(backend(), [&](Tensor w1, Tensor w2) {
    auto [s, unused] = fx::scan([&](Tensor s, Tensor n) {
      Tensor v = fx::sigmoid(fx::dot(fx::softplus(w2), fx::sigmoid(s * fx::softplus(w1)))) + n;
      return std::make_pair(v, fx::scalar(0, fx::f64));
    }, fx::scalar(0.5, fx::f64), fx::constant(noise));
    return s;
  }, uniform64({12}, -1, 1, 13), uniform64({12}, -1, 1, 14));
}

TEST_P(ReverseLoops, GradOfGradThroughALoop) {
  FLUXION_REQUIRE_F64(backend());
  // f(x) = sum of the loop's final state; the gradient program contains a reverse scan, and
  // differentiating it again goes through both scans.
  auto f = [](Tensor x) { return fx::sum(fx::fori_loop(0, 4, [&](Tensor, Tensor s) { return fx::sin(s) * x; }, x)); };
  Array v = uniform64({3}, -1, 1, 15);
  expect_gradients_match(backend(), [&](Tensor x) { return fx::sum(fx::grad(f)(x)[0] * fx::constant(v)); },
                         uniform64({3}, -1, 1, 16));
}

TEST_P(ReverseLoops, OneForwardAndOneReverseScanInTheProgram) {
  auto f = fx::jit(fx::grad([](Tensor w) {
    return fx::sum(fx::fori_loop(0, 8000, [&](Tensor, Tensor s) { return fx::sigmoid(s * w); }, w));
  }), backend());
  std::string ir = f.lower(Array(fx::DType::f32, {2})).ir();
  size_t first = ir.find(" = scan "), second = ir.find(" = scan ", first + 1);
  EXPECT_NE(second, std::string::npos) << ir;
  EXPECT_EQ(ir.find(" = scan ", second + 1), std::string::npos) << ir;
  EXPECT_NE(ir.find("reverse=true"), std::string::npos) << ir;
}

TEST_P(ReverseLoops, CondDifferentiatesTheTakenBranch) {
  FLUXION_REQUIRE_F64(backend());
  auto loss = [](Tensor x, Tensor w) {
    auto r = fx::cond(fx::sum(x) > 0.0, [&] { return std::make_tuple(fx::sin(x) * w, fx::sum(x)); },
                      [&] { return std::make_tuple(x * x, fx::sum(w)); });
    return fx::sum(std::get<0>(r)) * std::get<1>(r);
  };
  expect_gradients_match(backend(), loss, uniform64({3}, 0.1, 1, 17), uniform64({3}, -1, 1, 18));
  expect_gradients_match(backend(), loss, uniform64({3}, -1, -0.1, 19), uniform64({3}, -1, 1, 20));
  // Inside a loop, with a branch that depends on the step.
  expect_gradients_match(backend(), [](Tensor x) {
    return fx::sum(fx::fori_loop(0, 4, [&](Tensor i, Tensor s) {
      return fx::cond(fx::eq(i - (i / 2) * 2, fx::scalar(0, fx::i32)), [&] { return s * x; }, [&] { return fx::sin(s); });
    }, x));
  }, uniform64({2}, -1, 1, 21));
}

namespace {

// sum(sin(x) x), after a traced cond with no results (dead, but present when reverse mode reads
// the program: the adjoint sum looks back through the program's nodes, and once read a result
// such a node does not have).
Tensor after_a_cond_that_yields_nothing(Tensor x) {
  auto nothing = [] { return std::tuple<>{}; };
  fx::cond(fx::sum(x) > 0.0, nothing, nothing);
  return fx::sum(fx::sin(x) * x);
}

}  // namespace

TEST_P(ReverseLoops, ACondThatYieldsNothingIsSkipped) {
  FLUXION_REQUIRE_F64(backend());
  expect_gradients_match(backend(), after_a_cond_that_yields_nothing, uniform64({3}, -1, 1, 22));
  // Forward mode: the tangent along v is sum((cos(x) x + sin(x)) v).
  Array x = make(fx::f64, {0.5, -1, 2}, {3}), v = make(fx::f64, {1, 2, -1}, {3});
  auto tangent = fx::jit(
      [](Tensor x, Tensor v) { return fx::jvp(after_a_cond_that_yields_nothing, std::make_tuple(x), {v}).second; },
      backend());
  double want = 0;
  for (size_t i = 0; i < 3; ++i) {
    double xi = x.to_doubles()[i];
    want += (std::cos(xi) * xi + std::sin(xi)) * v.to_doubles()[i];
  }
  EXPECT_ARRAY(tangent(x, v), fx::f64, {}, {want});
}

TEST_P(ReverseLoops, WhileLoopWithDataDependentExit) {
  FLUXION_REQUIRE_F64(backend());
  // Doubles s and adds w until the sum passes 10: the trip count depends on the input, and the
  // gradient follows the iterations that ran (finite differences do not cross an exit change
  // for these inputs).
  auto loss = [](Tensor s0, Tensor w) {
    Tensor s = fx::while_loop([&](Tensor s) { return fx::sum(s) < 10.0; }, [&](Tensor s) { return s * 1.5 + w * w; },
                              s0, 20);
    return fx::sum(s * s);
  };
  expect_gradients_match(backend(), loss, make(fx::f64, {0.3, 0.2}, {2}), make(fx::f64, {0.5, -0.7}, {2}));
  expect_gradients_match(backend(), loss, make(fx::f64, {4.1, 5.0}, {2}), make(fx::f64, {0.5, -0.7}, {2}));
}

TEST_P(ReverseLoops, CheckpointedLoopsGiveTheSameValuesAndGradients) {
  FLUXION_REQUIRE_F64(backend());
  // Blocks of 4 steps with a remainder of 3 (19 = 4*4 + 3), forward and reverse, with xs, ys
  // and the step index: values and gradients equal those of the plain scan, and pass finite
  // differences.
  for (bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "reverse" : "forward");
    auto loss = [reverse](int64_t every) {
      return [reverse, every](Tensor w, Tensor xs) {
        auto [s, ys] = fx::scan([&](Tensor s, Tensor x) {
          Tensor next = fx::tanh(s * w + x);
          return std::make_pair(next, fx::sum(next));
        }, fx::zeros({2}, fx::f64), xs, {.reverse = reverse, .checkpoint = {every}});
        Tensor weights = fx::cast(fx::arange(19), fx::f64);  // ties each y to its step
        return fx::sum(s) + fx::sum(ys * weights);
      };
    };
    Array w = uniform64({2}, -1, 1, 22), xs = uniform64({19, 2}, -1, 1, 23);
    auto plain = fx::jit(fx::value_and_grad(loss(0), {0, 1}), backend());
    auto blocked = fx::jit(fx::value_and_grad(loss(4), {0, 1}), backend());
    auto [v0, g0] = plain(w, xs);
    auto [v1, g1] = blocked(w, xs);
    EXPECT_NEAR(v0.item(), v1.item(), 1e-12);
    for (size_t i = 0; i < 2; ++i) EXPECT_ARRAY(g1[i], fx::f64, g0[i].shape(), g0[i].to_doubles());
    EXPECT_NE(blocked.lower(w, xs).traced_ir().find("length=4"), std::string::npos);
    expect_gradients_match(backend(), loss(4), w, xs);
  }
}

TEST_P(ReverseLoops, W7FullLengthAgreesAcrossCheckpointPolicies) {
  FLUXION_REQUIRE_F64(backend());
  // The whole 8000-step loop of W7: the gradient with checkpoints every 100 steps (and every
  // 333, leaving a remainder) equals the one that saves every carry.
  Array noise = uniform64({8000}, -0.01, 0.01, 24);
  auto final_state = [&](int64_t every) {
    return [&noise, every](Tensor w1, Tensor w2) {
      Tensor k1 = fx::softplus(w1), k2 = fx::softplus(w2);
      return fx::fori_loop(0, 8000, [&](Tensor i, Tensor s) {
        return fx::sigmoid(fx::dot(k2, fx::sigmoid(s * k1))) + fx::squeeze(fx::take(fx::constant(noise), fx::reshape(i, {1})), 0);
      }, fx::scalar(0, fx::f64), fx::Checkpoint{every});
    };
  };
  Array w1 = uniform64({12}, -1, 1, 25), w2 = uniform64({12}, -1, 1, 26);
  auto [v0, g0] = fx::jit(fx::value_and_grad(final_state(0), {0, 1}), backend())(w1, w2);
  for (int64_t every : {100, 333}) {
    auto [v, g] = fx::jit(fx::value_and_grad(final_state(every), {0, 1}), backend())(w1, w2);
    EXPECT_NEAR(v.item(), v0.item(), 1e-12) << every;
    for (size_t i = 0; i < 2; ++i) EXPECT_ARRAY(g[i], fx::f64, {12}, g0[i].to_doubles());
  }
}
