// The benchmark's W6 model (bench/README.md): two stacked LSTM layers, feature-major, PyTorch's
// gate order and two biases per layer, loss = the sum of squares of the top layer's outputs
// over all steps. fluxion_bench times its training step; the deploy sample exports it.
#pragma once

#include <fluxion/fluxion.h>

#include <utility>
#include <vector>

namespace samples {

// One layer step: x [in, B], h and c [H, B]; all four gates from one product per input.
std::pair<fluxion::Tensor, fluxion::Tensor> lstm_cell(const fluxion::Tensor& Wx, const fluxion::Tensor& Wh,
                                                      const fluxion::Tensor& bx, const fluxion::Tensor& bh,
                                                      const fluxion::Tensor& x, const fluxion::Tensor& h,
                                                      const fluxion::Tensor& c);

// p = {w_ih [4H, in], w_hh [4H, H], b_ih [4H, 1], b_hh [4H, 1]} of layer 0, then of layer 1;
// xs [steps, input, batch].
fluxion::Tensor stacked_lstm_loss(const std::vector<fluxion::Tensor>& p, const fluxion::Tensor& xs);

// The training step: the loss and the parameters after one SGD step of rate `lr`.
std::pair<fluxion::Tensor, std::vector<fluxion::Tensor>> stacked_lstm_step(const std::vector<fluxion::Tensor>& p,
                                                                           const fluxion::Tensor& xs, float lr);

}  // namespace samples
