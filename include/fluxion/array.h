// Array: concrete data with a shape and a dtype, the values a compiled program takes and returns.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include "fluxion/dtype.h"
#include "fluxion/half.h"

namespace fluxion {

namespace detail {

// Bytes of an Array held in a device's memory, implemented by a backend (the Vulkan backend's
// results). Never written after it is made: a program writes its results into new buffers.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  // Copies the `bytes` bytes to host memory at `dst`.
  virtual void read(void* dst, size_t bytes) const = 0;
};

// Where an Array's bytes are: on the host, on a device, or both (the host copy is made on the
// first read). Shared by the copies of an Array.
struct ArrayStorage {
  std::mutex mu;
  std::shared_ptr<std::byte[]> host;
  std::shared_ptr<const DeviceBuffer> device;
};

}  // namespace detail

// A handle to row-major data held in host memory, or in device memory for the results of a
// program run on the Vulkan backend: those stay on the device, where the next program reads
// them without a copy, until something reads them on the host (to_vector, data(), item(), str()),
// which copies them once. Copies share the data (like a torch tensor); `clone()` makes an
// independent copy. Element types: float (f32), double (f64), int32_t (i32), bool (boolean, one
// byte per element), Half (f16) and BFloat16 (bf16).
class Array {
 public:
  // An empty f32 array of shape [0].
  Array();
  // A zero-filled array.
  Array(DType dtype, Shape shape);
  // Copies `data`; raises Error when data.size() != numel(shape) or a dimension is negative.
  Array(std::span<const float> data, Shape shape, std::source_location loc = std::source_location::current());
  Array(std::span<const double> data, Shape shape, std::source_location loc = std::source_location::current());
  Array(std::span<const int32_t> data, Shape shape, std::source_location loc = std::source_location::current());
  Array(const std::vector<float>& data, Shape shape, std::source_location loc = std::source_location::current())
      : Array(std::span<const float>(data), std::move(shape), loc) {}
  Array(const std::vector<double>& data, Shape shape, std::source_location loc = std::source_location::current())
      : Array(std::span<const double>(data), std::move(shape), loc) {}
  Array(const std::vector<int32_t>& data, Shape shape, std::source_location loc = std::source_location::current())
      : Array(std::span<const int32_t>(data), std::move(shape), loc) {}
  Array(const std::vector<bool>& data, Shape shape, std::source_location loc = std::source_location::current());
  Array(std::span<const Half> data, Shape shape, std::source_location loc = std::source_location::current());
  Array(std::span<const BFloat16> data, Shape shape, std::source_location loc = std::source_location::current());
  Array(const std::vector<Half>& data, Shape shape, std::source_location loc = std::source_location::current())
      : Array(std::span<const Half>(data), std::move(shape), loc) {}
  Array(const std::vector<BFloat16>& data, Shape shape, std::source_location loc = std::source_location::current())
      : Array(std::span<const BFloat16>(data), std::move(shape), loc) {}

  // An array whose contents are unspecified until written: for results about to be
  // overwritten (what backends return), saving the zero fill.
  static Array empty(DType dtype, Shape shape);

  // Rank-0 arrays.
  static Array scalar(float v);
  static Array scalar(double v);
  static Array scalar(int32_t v);
  static Array scalar(bool v);
  static Array scalar(Half v);
  static Array scalar(BFloat16 v);

  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  const TensorType& type() const { return type_; }
  int64_t rank() const { return type_.rank(); }
  int64_t size() const { return type_.numel(); }

  // Reads the data back. T must match dtype() (float/double/int32_t/bool/Half/BFloat16), else Error (naming
  // the caller's line).
  template <class T>
  std::vector<T> to_vector(std::source_location loc = std::source_location::current()) const;
  // Every element converted to double, whatever the dtype (handy in tests).
  std::vector<double> to_doubles() const;
  // The single element of a size-1 array converted to double; Error otherwise.
  double item(std::source_location loc = std::source_location::current()) const;

  // Raw host bytes, row-major, dtype_size(dtype()) bytes per element (copied from the device
  // first when the array lives there). Writing through mutable_data() leaves the host copy the
  // only one.
  const void* data() const;
  void* mutable_data();

  // Whether the bytes are in device memory (a result of the Vulkan backend), and that buffer.
  bool on_device() const;
  std::shared_ptr<const detail::DeviceBuffer> device_buffer() const;
  // An array whose bytes are `buffer` (for backends).
  static Array from_device(TensorType type, std::shared_ptr<const detail::DeviceBuffer> buffer);
  // Makes `buffer` (of this array's type) the bytes of this array and of every copy sharing
  // them, dropping the host copy (for backends: a device program's run_into updates its
  // outputs this way, and the buffer they held goes back to the device's pool).
  void assign_device(std::shared_ptr<const detail::DeviceBuffer> buffer);

  // An independent copy of the data.
  Array clone() const;
  // "f32[2,2] [[1, 2], [3, 4]]", eliding the middle of large arrays.
  std::string str() const;
  // The values alone, as str() writes them: "[[1, 2], [3, 4]]", or "0.5" for a scalar.
  std::string values_str() const;

 private:
  Array(TensorType type, std::shared_ptr<std::byte[]> bytes);
  // The host bytes, copied from the device on first use.
  std::byte* host() const;
  // Copies `data` (one element per position of type_.shape) into fresh storage.
  template <class T>
  void assign(std::span<const T> data, const std::source_location& loc);

  TensorType type_;
  std::shared_ptr<detail::ArrayStorage> storage_;  // numel * dtype_size bytes
};

}  // namespace fluxion
