// The sample programs' models, shared with the tests that train each of them briefly.
#pragma once

#include <fluxion/nn.h>

#include <cstdint>
#include <string>

namespace samples {

// W3: Flatten, 784 -> hidden (tanh) -> 10. With dropout > 0, Dropout(dropout) after the tanh
// (inside the activation's slot: the parameter names stay "1.weight", "3.weight", ...).
fluxion::nn::Model mlp_model(int64_t hidden = 32, double dropout = 0);
// W4, LeNet-5 for 1x28x28 images. With dropout > 0, Dropout(dropout) before the last dense layer
// (after the ReLU in front of it, names unchanged as in mlp_model).
fluxion::nn::Model lenet_model(double dropout = 0);
// Images [N, 1, 28, 28] read as 28 rows of 28 pixels by an LSTM or GRU ("lstm", "gru"); the
// last step's state feeds a dense layer over the 10 classes.
fluxion::nn::Model rnn_model(const std::string& cell, int64_t hidden = 128, int64_t layers = 1);

// The character model: embedding, LSTM over the sequence, dense layer to the vocabulary.
struct CharModel {
  CharModel(int64_t vocab, int64_t embed, int64_t hidden, int64_t layers);
  fluxion::nn::Embedding embedding;
  fluxion::nn::Recurrent lstm;
  fluxion::nn::Dense head;
  fluxion::nn::Model model;  // Sequential{embedding, lstm, head}: tokens [B, T] -> logits [B, T, vocab]
};

}  // namespace samples
