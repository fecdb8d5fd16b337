// Normalisation and regularisation layers: LayerNorm, BatchNorm (1-D and 2-D) and Dropout.
// Parameter and state names, shapes and defaults follow PyTorch's, so checkpoints map one to
// one onto a torch state_dict (batch norm's num_batches_tracked excepted: Fluxion does not
// keep it, since the running statistics use a fixed momentum).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fluxion/nn/layer.h"

namespace fluxion::nn {

// Normalises over the trailing axes `shape` (mean and biased variance of each example), then
// y = x_hat * weight + bias (weight ones, bias zeros, shaped `shape`) when affine.
class LayerNorm : public Layer {
 public:
  struct Options {
    double eps = 1e-5;
    bool affine = true;  // PyTorch's elementwise_affine
  };
  explicit LayerNorm(std::vector<int64_t> shape) : LayerNorm(std::move(shape), Options{}) {}
  LayerNorm(std::vector<int64_t> shape, Options opt);
  std::vector<ParamSpec> params() const override;
  Tensor forward(std::span<const Tensor> p, const Tensor& x) const override;
  std::string describe() const override;

 private:
  std::vector<int64_t> shape_;
  Options opt_;
};

// Batch normalisation over axis 1 of x [N, C] or [N, C, L] (1-D) or [N, C, H, W] (2-D). In
// training mode it normalises with the batch's mean and biased variance and updates the running
// statistics (running = (1 - momentum) running + momentum batch, the variance unbiased); in
// evaluation mode it normalises with the running statistics.
class BatchNorm : public Layer {
 public:
  struct Options {
    double eps = 1e-5;
    double momentum = 0.1;
    bool affine = true;
  };
  BatchNorm(int64_t features, int spatial_dims, Options opt);
  std::vector<ParamSpec> params() const override;
  std::vector<ParamSpec> state() const override;
  Tensor apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const override;
  std::string describe() const override;

 private:
  int64_t features_;
  int spatial_;  // 1: [N, C] or [N, C, L]; 2: [N, C, H, W]
  Options opt_;
};
inline BatchNorm BatchNorm1d(int64_t features, BatchNorm::Options opt = {}) { return {features, 1, opt}; }
inline BatchNorm BatchNorm2d(int64_t features, BatchNorm::Options opt = {}) { return {features, 2, opt}; }

// Inverted dropout in training mode (zeroes with probability p, scales the rest by 1 / (1 - p));
// the identity in evaluation mode.
class Dropout : public Layer {
 public:
  explicit Dropout(double p = 0.5);
  Tensor apply(std::span<const Tensor> p, const Tensor& x, Context& ctx) const override;
  std::string describe() const override;

 private:
  double p_;
};

}  // namespace fluxion::nn
