#include "common/stacked_lstm.h"

namespace fx = fluxion;
using fx::Tensor;

namespace samples {

std::pair<Tensor, Tensor> lstm_cell(const Tensor& Wx, const Tensor& Wh, const Tensor& bx, const Tensor& bh,
                                    const Tensor& x, const Tensor& h, const Tensor& c) {
  int64_t H = h.dim(0);
  Tensor gates = fx::matmul(Wx, x) + fx::matmul(Wh, h) + bx + bh;  // [4H, B]
  Tensor i = fx::sigmoid(fx::slice_axis(gates, 0, 0, H));
  Tensor f = fx::sigmoid(fx::slice_axis(gates, 0, H, 2 * H));
  Tensor g = fx::tanh(fx::slice_axis(gates, 0, 2 * H, 3 * H));
  Tensor o = fx::sigmoid(fx::slice_axis(gates, 0, 3 * H, 4 * H));
  Tensor c2 = f * c + i * g;
  return {o * fx::tanh(c2), c2};
}

Tensor stacked_lstm_loss(const std::vector<Tensor>& p, const Tensor& xs) {
  int64_t H = p[1].dim(1), B = xs.dim(2);
  using State = std::vector<Tensor>;
  State init(4, fx::zeros({H, B}));
  auto [state, tops] = fx::scan(
      [&](const State& s, const Tensor& x) {
        auto [h1, c1] = lstm_cell(p[0], p[1], p[2], p[3], x, s[0], s[1]);
        auto [h2, c2] = lstm_cell(p[4], p[5], p[6], p[7], h1, s[2], s[3]);
        return std::make_pair(State{h1, c1, h2, c2}, h2);
      },
      init, xs);
  return fx::sum(tops * tops);  // [steps, H, B]: the top layer's outputs over all steps
}

std::pair<Tensor, std::vector<Tensor>> stacked_lstm_step(const std::vector<Tensor>& p, const Tensor& xs, float lr) {
  auto [loss, g] = fx::value_and_grad(stacked_lstm_loss, {0})(p, xs);
  std::vector<Tensor> next;
  for (size_t i = 0; i < p.size(); ++i) next.push_back(p[i] - g[i] * lr);
  return {loss, next};
}

}  // namespace samples
