// The feed-forward layers. Weight layouts and parameter names follow PyTorch, so a checkpoint
// maps one to one onto a torch state_dict.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fluxion/nn/layer.h"
#include "fluxion/ops.h"

namespace fluxion::nn {

// y = x W^T + b over the last axis: x [..., in] -> [..., out]; weight [out, in], bias [out].
class Dense : public Layer {
 public:
  struct Options {
    bool bias = true;
    Initializer weight_init = Initializer::fan_in_uniform();
    Initializer bias_init = Initializer::fan_in_uniform();  // fan_in: the weight's
  };
  Dense(int64_t in, int64_t out) : Dense(in, out, Options{}) {}
  Dense(int64_t in, int64_t out, Options opt) : in_(in), out_(out), opt_(opt) {}
  std::vector<ParamSpec> params() const override;
  Tensor forward(std::span<const Tensor> p, const Tensor& x) const override;
  std::string describe() const override;

 private:
  int64_t in_, out_;
  Options opt_;
};

// 2-D convolution (cross-correlation, as PyTorch): x [N, in, H, W] -> [N, out, OH, OW];
// weight [out, in/groups, kh, kw], bias [out].
class Conv2d : public Layer {
 public:
  struct Options {
    std::vector<int64_t> stride{1, 1};
    std::vector<int64_t> padding{0, 0};
    std::vector<int64_t> dilation{1, 1};
    int64_t groups = 1;
    bool bias = true;
    Initializer weight_init = Initializer::fan_in_uniform();
    Initializer bias_init = Initializer::fan_in_uniform();
  };
  Conv2d(int64_t in, int64_t out, int64_t kernel) : Conv2d(in, out, {kernel, kernel}, Options{}) {}
  Conv2d(int64_t in, int64_t out, std::vector<int64_t> kernel, Options opt);
  std::vector<ParamSpec> params() const override;
  Tensor forward(std::span<const Tensor> p, const Tensor& x) const override;
  std::string describe() const override;

 private:
  int64_t in_, out_;
  std::vector<int64_t> kernel_;
  Options opt_;
};

// Max or average pooling over 2-D windows (max ignores padding; average counts it).
class Pool2d : public Layer {
 public:
  enum class Kind { Max, Avg };
  Pool2d(Kind kind, Pool2dOptions opt) : kind_(kind), opt_(std::move(opt)) {}
  Tensor forward(std::span<const Tensor> p, const Tensor& x) const override;
  std::string describe() const override;

 private:
  Kind kind_;
  Pool2dOptions opt_;
};
inline Pool2d MaxPool2d(int64_t window) { return {Pool2d::Kind::Max, {{window, window}, {}, {0, 0}}}; }
inline Pool2d MaxPool2d(Pool2dOptions opt) { return {Pool2d::Kind::Max, std::move(opt)}; }
inline Pool2d AvgPool2d(int64_t window) { return {Pool2d::Kind::Avg, {{window, window}, {}, {0, 0}}}; }
inline Pool2d AvgPool2d(Pool2dOptions opt) { return {Pool2d::Kind::Avg, std::move(opt)}; }

// Flattens every axis from `start_axis` on: [N, C, H, W] -> [N, C*H*W] by default.
class Flatten : public Layer {
 public:
  explicit Flatten(int64_t start_axis = 1) : start_(start_axis) {}
  Tensor forward(std::span<const Tensor> p, const Tensor& x) const override;
  std::string describe() const override;

 private:
  int64_t start_;
};

// Reshapes every example: x [N, ...] -> [N, shape...] (one entry of `shape` may be -1).
class Reshape : public Layer {
 public:
  explicit Reshape(std::vector<int64_t> shape) : shape_(std::move(shape)) {}
  Tensor forward(std::span<const Tensor> p, const Tensor& x) const override;
  std::string describe() const override;

 private:
  std::vector<int64_t> shape_;
};

// An elementwise activation as a layer.
class Activation : public Layer {
 public:
  enum class Kind { Relu, Tanh, Sigmoid, Softplus, Gelu, GeluTanh, Silu };
  explicit Activation(Kind kind) : kind_(kind) {}
  Tensor forward(std::span<const Tensor> p, const Tensor& x) const override;
  std::string describe() const override;

 private:
  Kind kind_;
};
inline Activation ReLU() { return Activation(Activation::Kind::Relu); }
inline Activation Tanh() { return Activation(Activation::Kind::Tanh); }
inline Activation Sigmoid() { return Activation(Activation::Kind::Sigmoid); }
inline Activation Softplus() { return Activation(Activation::Kind::Softplus); }
// GELU with the exact normal CDF (PyTorch's default), or with its tanh approximation.
inline Activation GELU(bool tanh_approximation = false) {
  return Activation(tanh_approximation ? Activation::Kind::GeluTanh : Activation::Kind::Gelu);
}
inline Activation SiLU() { return Activation(Activation::Kind::Silu); }

// A lookup table: i32 indices [...] -> [..., dim]; weight [count, dim], initialised N(0, 1)
// as in PyTorch. Out-of-range indices are clamped (as take does).
class Embedding : public Layer {
 public:
  Embedding(int64_t count, int64_t dim, Initializer init = Initializer::normal(0, 1))
      : count_(count), dim_(dim), init_(init) {}
  std::vector<ParamSpec> params() const override;
  Tensor forward(std::span<const Tensor> p, const Tensor& x) const override;
  std::string describe() const override;

 private:
  int64_t count_, dim_;
  Initializer init_;
};

}  // namespace fluxion::nn
