// Creation ops (constants, ranges) and counter-based random numbers.
#include <cmath>
#include <string>

#include "dsl/trace.h"
#include "fluxion/error.h"
#include "fluxion/ops.h"

namespace fluxion {
namespace {

using ir::Op;

TensorType checked_type(std::vector<int64_t> shape, DType dtype, const char* op, const Loc& loc) {
  for (int64_t d : shape) {
    if (d < 0) detail::fail(op, "shape " + shape_str(shape) + " has a negative dimension", &loc);
  }
  return TensorType{dtype, std::move(shape)};
}

}  // namespace

Tensor full(std::vector<int64_t> shape, double value, DType dtype, Loc loc) {
  TensorType t = checked_type(std::move(shape), dtype, "constant", loc);
  if (dtype == DType::i32 && value != static_cast<double>(static_cast<int32_t>(value))) {
    detail::fail("constant", "value " + std::to_string(value) + " is not an i32", &loc);
  }
  if (dtype == DType::boolean) value = value != 0;
  return detail::splat(value, t, loc);
}
Tensor zeros(std::vector<int64_t> shape, DType dtype, Loc loc) { return full(std::move(shape), 0, dtype, loc); }
Tensor ones(std::vector<int64_t> shape, DType dtype, Loc loc) { return full(std::move(shape), 1, dtype, loc); }
Tensor zeros_like(const Tensor& x, Loc loc) { return full(x.shape(), 0, x.dtype(), loc); }
Tensor ones_like(const Tensor& x, Loc loc) { return full(x.shape(), 1, x.dtype(), loc); }
Tensor scalar(double value, DType dtype, Loc loc) { return full({}, value, dtype, loc); }

Tensor arange(int64_t stop, DType dtype, Loc loc) { return arange(0, static_cast<double>(stop), 1, dtype, loc); }

Tensor arange(double start, double stop, double step, DType dtype, Loc loc) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step) || !is_numeric(dtype)) {
    detail::fail("iota", "arange(" + std::to_string(start) + ", " + std::to_string(stop) + ", " +
                             std::to_string(step) + ") needs finite bounds, a non-zero step and a numeric dtype",
                 &loc);
  }
  if (dtype == DType::i32 && (start != std::trunc(start) || step != std::trunc(step))) {
    detail::fail("iota", "an i32 arange needs integral start and step", &loc);
  }
  int64_t n = static_cast<int64_t>(std::max(0.0, std::ceil((stop - start) / step)));
  ir::Attrs a;
  a.axes = {0};
  Tensor r = detail::emit1(Op::Iota, {}, loc, std::move(a), {TensorType{dtype, {n}}});
  if (step != 1) r = r * step;
  if (start != 0) r = r + start;
  return r;
}

Tensor constant(const Array& arr, Loc loc) {
  ir::Attrs a;
  a.data = arr.to_doubles();
  return detail::emit1(Op::Constant, {}, loc, std::move(a), {arr.type()});
}

namespace random {

Tensor key(uint64_t seed, Loc loc) {
  // The two 32-bit halves of the seed, bit-cast to i32.
  ir::Attrs a;
  a.data = {static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(seed))),
            static_cast<double>(static_cast<int32_t>(static_cast<uint32_t>(seed >> 32)))};
  return detail::emit1(Op::Constant, {}, loc, std::move(a), {TensorType{DType::i32, {2}}});
}

Tensor fold_in(const Tensor& key, const Tensor& data, Loc loc) {
  return detail::emit1(Op::RngFold, {key, data}, loc);
}

Tensor fold_in(const Tensor& key, int32_t data, Loc loc) {
  return fold_in(key, scalar(data, DType::i32, loc), loc);
}

Tensor uniform(const Tensor& key, std::vector<int64_t> shape, DType dtype, double lo, double hi, Loc loc) {
  Tensor u = detail::emit1(Op::RngUniform, {key}, loc, {}, {checked_type(std::move(shape), dtype, "rng_uniform", loc)});
  if (hi - lo != 1) u = u * (hi - lo);
  if (lo != 0) u = u + lo;
  return u;
}

Tensor normal(const Tensor& key, std::vector<int64_t> shape, DType dtype, double mean, double stddev, Loc loc) {
  Tensor z = detail::emit1(Op::RngNormal, {key}, loc, {}, {checked_type(std::move(shape), dtype, "rng_normal", loc)});
  if (stddev != 1) z = z * stddev;
  if (mean != 0) z = z + mean;
  return z;
}

}  // namespace random
}  // namespace fluxion
