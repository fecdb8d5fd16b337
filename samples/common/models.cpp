#include "common/models.h"

namespace samples {

namespace nn = fluxion::nn;

namespace {

// The activation followed by Dropout(p) as one parameterless layer (the activation alone when p
// is 0), so that the layers after it keep their indices and parameter names.
nn::Model with_dropout(const nn::Model& activation, double p) {
  if (p == 0) return activation;
  return nn::Sequential{activation, nn::Dropout(p)};
}

}  // namespace

nn::Model mlp_model(int64_t hidden, double dropout) {
  return nn::Sequential{nn::Flatten(), nn::Dense(784, hidden), with_dropout(nn::Tanh(), dropout),
                        nn::Dense(hidden, 10)};
}

nn::Model lenet_model(double dropout) {
  return nn::Sequential{nn::Conv2d(1, 6, 5),
                        nn::ReLU(),
                        nn::MaxPool2d(2),
                        nn::Conv2d(6, 16, 5),
                        nn::ReLU(),
                        nn::MaxPool2d(2),
                        nn::Flatten(),
                        nn::Dense(256, 120),
                        nn::ReLU(),
                        nn::Dense(120, 84),
                        with_dropout(nn::ReLU(), dropout),
                        nn::Dense(84, 10)};
}

nn::Model rnn_model(const std::string& cell, int64_t hidden, int64_t layers) {
  nn::RecurrentOptions rnn{.input = 28, .hidden = hidden, .layers = layers, .batch_first = true, .last_only = true};
  nn::Model recurrent = cell == "gru" ? nn::Model(nn::GRU(rnn)) : nn::Model(nn::LSTM(rnn));
  return nn::Sequential{nn::Reshape({28, 28}), recurrent, nn::Dense(hidden, 10)};
}

CharModel::CharModel(int64_t vocab, int64_t embed, int64_t hidden, int64_t layers)
    : embedding(vocab, embed),
      lstm(nn::LSTM({.input = embed, .hidden = hidden, .layers = layers, .batch_first = true})),
      head(hidden, vocab),
      model(nn::Sequential{embedding, lstm, head}) {}

}  // namespace samples
