// Gradients of whole models against finite differences: LeNet (W4, small), an LSTM cell, a
// two-layer LSTM over 10 steps, a GRU cell.
#include "autodiff/gradcheck.h"
#include "common/test_names.h"

class Models : public BackendTest {};
FLUXION_INSTANTIATE_BACKENDS(Models);

namespace {

// One LSTM step with all four gates from one matmul per input (seed 001).
std::pair<Tensor, Tensor> lstm_step(Tensor Wx, Tensor Wh, Tensor b, Tensor x, Tensor h, Tensor c) {
  int64_t H = h.dim(0);
  Tensor gates = fx::matmul(Wx, x) + fx::matmul(Wh, h) + b;  // [4H, B]
  Tensor i = fx::sigmoid(fx::slice_axis(gates, 0, 0, H));
  Tensor f = fx::sigmoid(fx::slice_axis(gates, 0, H, 2 * H));
  Tensor g = fx::tanh(fx::slice_axis(gates, 0, 2 * H, 3 * H));
  Tensor o = fx::sigmoid(fx::slice_axis(gates, 0, 3 * H, 4 * H));
  Tensor c2 = f * c + i * g;
  return {o * fx::tanh(c2), c2};
}

}  // namespace

TEST_P(Models, LeNet) {
  FLUXION_REQUIRE_F64(backend());
  // W4's layers at a small size: conv 5x5 1->2 relu, maxpool 2, conv 3x3 2->3 relu, maxpool 2,
  // dense 12->5 relu, 5->3.
  auto loss = [](Tensor c1, Tensor b1, Tensor c2, Tensor b2, Tensor d1, Tensor e1, Tensor d2, Tensor x) {
    Tensor h = fx::relu(fx::conv2d(x, c1) + fx::reshape(b1, {1, 2, 1, 1}));
    h = fx::max_pool2d(h, {.window = {2, 2}});
    h = fx::relu(fx::conv2d(h, c2) + fx::reshape(b2, {1, 3, 1, 1}));
    h = fx::max_pool2d(h, {.window = {2, 2}});
    h = fx::transpose(fx::flatten(h, 1));  // [12, batch]
    h = fx::relu(fx::matmul(d1, h) + e1);
    Tensor y = fx::matmul(d2, h);
    return fx::sum(y * y);
  };
  Array x = uniform64({2, 1, 16, 16}, -1, 1, 1);
  expect_gradients_match(backend(), [&](Tensor c1, Tensor b1, Tensor c2, Tensor b2, Tensor d1, Tensor e1, Tensor d2) {
    return loss(c1, b1, c2, b2, d1, e1, d2, fx::constant(x));
  }, uniform64({2, 1, 5, 5}, -0.5, 0.5, 2), uniform64({2}, -0.1, 0.1, 3), uniform64({3, 2, 3, 3}, -0.5, 0.5, 4),
     uniform64({3}, -0.1, 0.1, 5), uniform64({5, 12}, -0.5, 0.5, 6), uniform64({5, 1}, -0.1, 0.1, 7),
     uniform64({3, 5}, -0.5, 0.5, 8));
}

TEST_P(Models, LstmCell) {
  FLUXION_REQUIRE_F64(backend());
  Array x = uniform64({3, 2}, -1, 1, 9);
  expect_gradients_match(backend(), [&](Tensor Wx, Tensor Wh, Tensor b, Tensor h, Tensor c) {
    auto [h2, c2] = lstm_step(Wx, Wh, b, fx::constant(x), h, c);
    return fx::sum(h2 * h2) + fx::sum(c2);
  }, uniform64({8, 3}, -0.5, 0.5, 10), uniform64({8, 2}, -0.5, 0.5, 11), uniform64({8, 1}, -0.1, 0.1, 12),
     uniform64({2, 2}, -1, 1, 13), uniform64({2, 2}, -1, 1, 14));
}

TEST_P(Models, TwoLayerLstmOverTenSteps) {
  FLUXION_REQUIRE_F64(backend());
  Array xs = uniform64({10, 3, 2}, -1, 1, 15);
  auto loss = [&](Tensor Wx1, Tensor Wh1, Tensor b1, Tensor Wx2, Tensor Wh2, Tensor b2) {
    using State = std::vector<Tensor>;
    State init{fx::zeros({2, 2}, fx::f64), fx::zeros({2, 2}, fx::f64), fx::zeros({2, 2}, fx::f64), fx::zeros({2, 2}, fx::f64)};
    auto [state, tops] = fx::scan([&](State s, Tensor x) {
      auto [h1, c1] = lstm_step(Wx1, Wh1, b1, x, s[0], s[1]);
      auto [h2, c2] = lstm_step(Wx2, Wh2, b2, h1, s[2], s[3]);
      return std::make_pair(State{h1, c1, h2, c2}, h2);
    }, init, fx::constant(xs));
    return fx::sum(tops * tops);  // squares of the top layer's outputs over all steps (W6)
  };
  expect_gradients_match(backend(), loss, uniform64({8, 3}, -0.5, 0.5, 16), uniform64({8, 2}, -0.5, 0.5, 17),
                         uniform64({8, 1}, -0.1, 0.1, 18), uniform64({8, 2}, -0.5, 0.5, 19),
                         uniform64({8, 2}, -0.5, 0.5, 20), uniform64({8, 1}, -0.1, 0.1, 21));
}

TEST_P(Models, GruCell) {
  FLUXION_REQUIRE_F64(backend());
  Array x = uniform64({3, 2}, -1, 1, 22);
  expect_gradients_match(backend(), [&](Tensor Wx, Tensor Wh, Tensor b, Tensor h) {
    int64_t H = h.dim(0);
    Tensor gx = fx::matmul(Wx, fx::constant(x)) + b, gh = fx::matmul(Wh, h);  // [3H, B] each
    Tensor r = fx::sigmoid(fx::slice_axis(gx, 0, 0, H) + fx::slice_axis(gh, 0, 0, H));
    Tensor z = fx::sigmoid(fx::slice_axis(gx, 0, H, 2 * H) + fx::slice_axis(gh, 0, H, 2 * H));
    Tensor n = fx::tanh(fx::slice_axis(gx, 0, 2 * H, 3 * H) + r * fx::slice_axis(gh, 0, 2 * H, 3 * H));
    Tensor h2 = (1.0 - z) * n + z * h;
    return fx::sum(h2 * h2);
  }, uniform64({6, 3}, -0.5, 0.5, 23), uniform64({6, 2}, -0.5, 0.5, 24), uniform64({6, 1}, -0.1, 0.1, 25),
     uniform64({2, 2}, -1, 1, 26));
}
