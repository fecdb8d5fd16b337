// Recurrent layers: LSTM and GRU cells, and multi-layer networks over a sequence. Parameters and
// gate order follow PyTorch (LSTM gates i, f, g, o; GRU gates r, z, n; names weight_ih_l0,
// weight_hh_l0, bias_ih_l0, bias_hh_l0), so checkpoints map onto a torch state_dict.
//
// Speed: all gates come from one matmul per input. Over a sequence, the input
// matmul of every step is hoisted out of the loop into one matmul over [T*B, in]; a step is
// then one matmul (h W_hh^T) whose epilogue adds the hoisted input gates, and one fused kernel
// for everything after it, forward and backward. Each layer is one scan (the loop stays in the
// compiled program: one call runs every step).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fluxion/control.h"
#include "fluxion/nn/layer.h"

namespace fluxion::nn {

enum class CellKind { Lstm, Gru };

// One step of an LSTM or GRU cell. State: {h, c} for an LSTM, {h} for a GRU, each [B, hidden].
// Parameters: weight_ih [G*hidden, input], weight_hh [G*hidden, hidden], bias_ih, bias_hh
// [G*hidden] (G = 4 for an LSTM, 3 for a GRU). As a layer, forward(x [B, input]) runs one step
// from a zero state and returns the new h.
class RecurrentCell : public Layer {
 public:
  RecurrentCell(CellKind kind, int64_t input, int64_t hidden) : kind_(kind), input_(input), hidden_(hidden) {}
  std::vector<ParamSpec> params() const override;
  Tensor forward(std::span<const Tensor> p, const Tensor& x) const override;
  std::string describe() const override;
  std::vector<Tensor> step(std::span<const Tensor> p, const Tensor& x, const std::vector<Tensor>& state) const;
  std::vector<Tensor> zero_state(int64_t batch) const;

 private:
  CellKind kind_;
  int64_t input_, hidden_;
};
inline RecurrentCell LSTMCell(int64_t input, int64_t hidden) { return {CellKind::Lstm, input, hidden}; }
inline RecurrentCell GRUCell(int64_t input, int64_t hidden) { return {CellKind::Gru, input, hidden}; }

struct RecurrentOptions {
  int64_t input = 0;
  int64_t hidden = 0;
  int64_t layers = 1;
  // x [B, T, input] -> [B, T, hidden] when true; x [T, B, input] -> [T, B, hidden] when false.
  bool batch_first = true;
  // forward() returns only the top layer's last output [B, hidden] (a sequence classifier).
  bool last_only = false;
  // Reverse-mode memory policy of each layer's loop (see control.h).
  Checkpoint checkpoint{};
};

// A stack of `layers` cells run over a sequence; layer k > 0 reads layer k-1's outputs.
class Recurrent : public Layer {
 public:
  Recurrent(CellKind kind, RecurrentOptions opt);
  std::vector<ParamSpec> params() const override;
  Tensor forward(std::span<const Tensor> p, const Tensor& x) const override;
  std::string describe() const override;
  // The top layer's outputs over the sequence (laid out as forward's input) and the final
  // state, starting from `state` (every layer's cell state in order: h0, c0, h1, c1, ... for an
  // LSTM; h0, h1, ... for a GRU).
  std::pair<Tensor, std::vector<Tensor>> run(std::span<const Tensor> p, const Tensor& x,
                                             const std::vector<Tensor>& state) const;
  // One time step through every layer: x [B, input] -> the top layer's h [B, hidden] and the
  // new state (as run's). For generation, one token at a time.
  std::pair<Tensor, std::vector<Tensor>> step(std::span<const Tensor> p, const Tensor& x,
                                              const std::vector<Tensor>& state) const;
  std::vector<Tensor> zero_state(int64_t batch) const;
  const RecurrentOptions& options() const { return opt_; }

 private:
  CellKind kind_;
  RecurrentOptions opt_;
};
inline Recurrent LSTM(RecurrentOptions opt) { return {CellKind::Lstm, opt}; }
inline Recurrent GRU(RecurrentOptions opt) { return {CellKind::Gru, opt}; }

}  // namespace fluxion::nn
