// The deploy sample's classifier: a 784-128-10 MLP trained by SGD on Fashion-MNIST, the
// batches it trains on, and the loop both executables run, so that the exported program
// trained in another process gives bitwise the parameters it gives here.
#pragma once

#include <fluxion/compiled.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace deploy {

inline constexpr int64_t kBatch = 64;
inline const std::vector<std::string> kParameters = {"w1", "b1", "w2", "b2"};

// Rows [begin, begin + n) of a [N, ...] array.
inline fluxion::Array rows(const fluxion::Array& a, int64_t begin, int64_t n) {
  fluxion::Shape shape = a.shape();
  int64_t row_bytes = a.size() / shape[0] * fluxion::dtype_size(a.dtype());
  shape[0] = n;
  fluxion::Array out = fluxion::Array::empty(a.dtype(), shape);
  std::memcpy(out.mutable_data(), static_cast<const char*>(a.data()) + begin * row_bytes,
              static_cast<size_t>(n * row_bytes));
  return out;
}

// SGD steps [first, first + count) of `step` (parameters, images, labels, rate -> parameters,
// loss); step s trains on batch s (cyclically) of data["train_x"] and data["train_y"]. Updates
// data's parameters; returns the last loss.
inline float train(const fluxion::Compiled& step, std::map<std::string, fluxion::Array>& data, int64_t first,
                   int64_t count) {
  const fluxion::Array& x = data.at("train_x");
  const fluxion::Array& y = data.at("train_y");
  int64_t batches = x.shape()[0] / kBatch;
  fluxion::Array rate(std::vector<float>{0.05f}, {});
  double loss = 0;
  for (int64_t s = first; s < first + count; ++s) {
    int64_t b = s % batches;
    std::vector<fluxion::Array> in;
    for (const std::string& p : kParameters) in.push_back(data.at(p));
    in.push_back(rows(x, b * kBatch, kBatch));
    in.push_back(rows(y, b * kBatch, kBatch));
    in.push_back(rate);
    std::vector<fluxion::Array> out = step.run(in);
    for (size_t i = 0; i < kParameters.size(); ++i) data.at(kParameters[i]) = out[i];
    loss = out.back().to_doubles()[0];
  }
  return static_cast<float>(loss);
}

// The fraction of data["test_x"] that `classify` (parameters, images -> labels) labels right.
inline double accuracy(const fluxion::Compiled& classify, const std::map<std::string, fluxion::Array>& data) {
  std::vector<fluxion::Array> in;
  for (const std::string& p : kParameters) in.push_back(data.at(p));
  in.push_back(data.at("test_x"));
  std::vector<double> got = classify.run(in)[0].to_doubles(), want = data.at("test_y").to_doubles();
  int64_t right = 0;
  for (size_t i = 0; i < want.size(); ++i) right += got[i] == want[i];
  return static_cast<double>(right) / static_cast<double>(want.size());
}

inline bool bitwise_equal(const fluxion::Array& a, const fluxion::Array& b) {
  return a.type() == b.type() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.size() * fluxion::dtype_size(a.dtype()))) == 0;
}

}  // namespace deploy
