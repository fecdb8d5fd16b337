// Tensor: a traced value. Inside a function given to fx::jit (or a loop body), every Tensor
// stands for one value of the graph IR being recorded; ops on Tensors record ops.
#pragma once

#include <cstdint>
#include <memory>
#include <source_location>

#include "fluxion/dtype.h"

namespace fluxion {

namespace detail {
struct Frame;
struct TensorAccess;
}  // namespace detail

class Tensor {
 public:
  // An empty handle; using it in an op raises Error.
  Tensor() = default;

  const TensorType& type() const { return type_; }
  const Shape& shape() const { return type_.shape; }
  DType dtype() const { return type_.dtype; }
  int64_t rank() const { return type_.rank(); }
  int64_t numel() const { return type_.numel(); }
  // Size of dimension `axis`; negative axes count from the end. Error when out of range.
  int64_t dim(int64_t axis, std::source_location loc = std::source_location::current()) const;
  bool valid() const { return frame_ != nullptr; }

 private:
  friend struct detail::TensorAccess;
  std::shared_ptr<detail::Frame> frame_;
  int32_t id_ = -1;
  TensorType type_;
};

namespace detail {
// A Tensor operand of an operator that remembers the user's call site: operators cannot take
// a defaulted source_location parameter, but the implicit conversion to this type can.
struct At {
  const Tensor& t;
  std::source_location loc;
  At(const Tensor& t, std::source_location loc = std::source_location::current()) : t(t), loc(loc) {}
};
}  // namespace detail

// Arithmetic with NumPy broadcasting. Tensor-Tensor operands must share a dtype (cast first);
// a C++ scalar takes the Tensor's dtype (an i32 Tensor accepts only integral scalars).
Tensor operator+(detail::At a, const Tensor& b);
Tensor operator-(detail::At a, const Tensor& b);
Tensor operator*(detail::At a, const Tensor& b);
Tensor operator/(detail::At a, const Tensor& b);
Tensor operator+(detail::At a, double b);
Tensor operator-(detail::At a, double b);
Tensor operator*(detail::At a, double b);
Tensor operator/(detail::At a, double b);
Tensor operator+(double a, detail::At b);
Tensor operator-(double a, detail::At b);
Tensor operator*(double a, detail::At b);
Tensor operator/(double a, detail::At b);
Tensor operator-(detail::At a);

// Comparisons return bool Tensors (elementwise, broadcasting).
Tensor operator==(detail::At a, const Tensor& b);
Tensor operator!=(detail::At a, const Tensor& b);
Tensor operator<(detail::At a, const Tensor& b);
Tensor operator<=(detail::At a, const Tensor& b);
Tensor operator>(detail::At a, const Tensor& b);
Tensor operator>=(detail::At a, const Tensor& b);
Tensor operator==(detail::At a, double b);
Tensor operator!=(detail::At a, double b);
Tensor operator<(detail::At a, double b);
Tensor operator<=(detail::At a, double b);
Tensor operator>(detail::At a, double b);
Tensor operator>=(detail::At a, double b);

// Logical ops on bool Tensors.
Tensor operator&(detail::At a, const Tensor& b);
Tensor operator|(detail::At a, const Tensor& b);
Tensor operator!(detail::At a);

}  // namespace fluxion
