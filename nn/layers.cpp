#include "fluxion/nn/layers.h"

#include "fluxion/error.h"
#include "fluxion/nn/functional.h"

namespace fluxion::nn {

namespace {

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "x" : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

std::vector<ParamSpec> Dense::params() const {
  std::vector<ParamSpec> p{{"weight", {out_, in_}, opt_.weight_init}};
  if (opt_.bias) {
    Initializer b = opt_.bias_init;
    if (b.kind == Initializer::Kind::FanInUniform && b.fan_in == 0) b.fan_in = in_;
    p.push_back({"bias", {out_}, b});
  }
  return p;
}

Tensor Dense::forward(std::span<const Tensor> p, const Tensor& x) const {
  expect_input(describe(), x, 1, -1, in_, true);
  Tensor y = matmul(x, transpose(p[0]));
  return opt_.bias ? y + p[1] : y;
}

std::string Dense::describe() const {
  return "Dense(" + std::to_string(in_) + " -> " + std::to_string(out_) + (opt_.bias ? "" : ", no bias") + ")";
}

Conv2d::Conv2d(int64_t in, int64_t out, std::vector<int64_t> kernel, Options opt)
    : in_(in), out_(out), kernel_(std::move(kernel)), opt_(std::move(opt)) {
  if (kernel_.size() != 2 || kernel_[0] < 1 || kernel_[1] < 1 || opt_.groups < 1 || in_ % opt_.groups != 0 ||
      out_ % opt_.groups != 0) {
    fluxion::detail::fail("nn::Conv2d",
                          "kernel " + join(kernel_) + " with " + std::to_string(in_) + " -> " + std::to_string(out_) +
                              " channels in " + std::to_string(opt_.groups) +
                              " groups: expected two positive kernel sizes and channels divisible by groups");
  }
}

std::vector<ParamSpec> Conv2d::params() const {
  std::vector<ParamSpec> p{{"weight", {out_, in_ / opt_.groups, kernel_[0], kernel_[1]}, opt_.weight_init}};
  if (opt_.bias) {
    Initializer b = opt_.bias_init;
    if (b.kind == Initializer::Kind::FanInUniform && b.fan_in == 0)
      b.fan_in = in_ / opt_.groups * kernel_[0] * kernel_[1];
    p.push_back({"bias", {out_}, b});
  }
  return p;
}

Tensor Conv2d::forward(std::span<const Tensor> p, const Tensor& x) const {
  expect_input(describe(), x, 4, 1, in_);
  Tensor y = conv2d(x, p[0], {opt_.stride, opt_.padding, opt_.dilation, opt_.groups});
  return opt_.bias ? y + reshape(p[1], {1, out_, 1, 1}) : y;
}

std::string Conv2d::describe() const {
  return "Conv2d(" + std::to_string(in_) + " -> " + std::to_string(out_) + ", kernel " + join(kernel_) +
         (opt_.stride == std::vector<int64_t>{1, 1} ? "" : ", stride " + join(opt_.stride)) +
         (opt_.padding == std::vector<int64_t>{0, 0} ? "" : ", padding " + join(opt_.padding)) + ")";
}

Tensor Pool2d::forward(std::span<const Tensor>, const Tensor& x) const {
  expect_input(describe(), x, 4, 0, -1);
  return kind_ == Kind::Max ? max_pool2d(x, opt_) : avg_pool2d(x, opt_);
}

std::string Pool2d::describe() const {
  return std::string(kind_ == Kind::Max ? "MaxPool2d(" : "AvgPool2d(") + join(opt_.window) + ")";
}

Tensor Flatten::forward(std::span<const Tensor>, const Tensor& x) const { return flatten(x, start_); }

std::string Flatten::describe() const { return "Flatten(from axis " + std::to_string(start_) + ")"; }

Tensor Reshape::forward(std::span<const Tensor>, const Tensor& x) const {
  expect_input(describe(), x, 1, 0, -1, true);
  std::vector<int64_t> shape{x.dim(0)};
  shape.insert(shape.end(), shape_.begin(), shape_.end());
  return reshape(x, shape);
}

std::string Reshape::describe() const {
  std::string s;
  for (size_t i = 0; i < shape_.size(); ++i) s += (i ? "," : "") + std::to_string(shape_[i]);
  return "Reshape([N," + s + "])";
}

Tensor Activation::forward(std::span<const Tensor>, const Tensor& x) const {
  switch (kind_) {
    case Kind::Relu: return relu(x);
    case Kind::Tanh: return tanh(x);
    case Kind::Sigmoid: return sigmoid(x);
    case Kind::Softplus: return softplus(x);
    case Kind::Gelu: return gelu(x);
    case Kind::GeluTanh: return gelu(x, true);
    case Kind::Silu: return silu(x);
  }
  fluxion::detail::fail("nn::Activation", "unknown kind");
}

std::string Activation::describe() const {
  switch (kind_) {
    case Kind::Relu: return "ReLU";
    case Kind::Tanh: return "Tanh";
    case Kind::Sigmoid: return "Sigmoid";
    case Kind::Softplus: return "Softplus";
    case Kind::Gelu: return "GELU";
    case Kind::GeluTanh: return "GELU(tanh)";
    case Kind::Silu: return "SiLU";
  }
  return "Activation";
}

std::vector<ParamSpec> Embedding::params() const { return {{"weight", {count_, dim_}, init_}}; }

Tensor Embedding::forward(std::span<const Tensor> p, const Tensor& x) const {
  if (!x.valid() || x.dtype() != i32)
    fluxion::detail::fail(describe(),
                          "input " + (x.valid() ? x.type().str() : std::string("(empty)")) + ": expected i32 indices");
  return take(p[0], x, 0);
}

std::string Embedding::describe() const {
  return "Embedding(" + std::to_string(count_) + " x " + std::to_string(dim_) + ")";
}

}  // namespace fluxion::nn
