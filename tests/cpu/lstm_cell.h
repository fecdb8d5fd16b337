// One LSTM step as the CPU tests write it: all four gates from one matmul per input (seed 001),
// features first (x [in, B], h and c [H, B]). Returns the new h and c.
#pragma once

#include <fluxion/fluxion.h>

#include <utility>

namespace fluxion::testing {

inline std::pair<Tensor, Tensor> lstm_cell(const Tensor& Wx, const Tensor& Wh, const Tensor& b, const Tensor& x,
                                           const Tensor& h, const Tensor& c) {
  int64_t H = h.dim(0);
  Tensor gates = matmul(Wx, x) + matmul(Wh, h) + b;
  Tensor i = sigmoid(slice_axis(gates, 0, 0, H));
  Tensor f = sigmoid(slice_axis(gates, 0, H, 2 * H));
  Tensor g = tanh(slice_axis(gates, 0, 2 * H, 3 * H));
  Tensor o = sigmoid(slice_axis(gates, 0, 3 * H, 4 * H));
  Tensor c2 = f * c + i * g;
  return {o * tanh(c2), c2};
}

}  // namespace fluxion::testing
