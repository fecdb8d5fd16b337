#include "fluxion/array.h"

#include <cstring>
#include <new>
#include <sstream>

#include "fluxion/error.h"

namespace fluxion {
namespace {

// Validates a user-given shape: no negative dimension, and a byte size that fits in memory
// arithmetic without overflow.
int64_t checked_numel(const Shape& shape, const std::source_location* loc) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) detail::fail("Array", "negative dimension in shape " + shape_str(shape), loc);
    if (d != 0 && n > (int64_t{1} << 40) / d) {
      detail::fail("Array", "shape " + shape_str(shape) + " is too large", loc);
    }
    n *= d;
  }
  return n;
}

template <class T>
DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  if constexpr (std::is_same_v<T, double>) return DType::f64;
  if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  if constexpr (std::is_same_v<T, bool>) return DType::boolean;
  if constexpr (std::is_same_v<T, Half>) return DType::f16;
  if constexpr (std::is_same_v<T, BFloat16>) return DType::bf16;
}

}  // namespace

Array::Array() : Array(DType::f32, Shape{0}) {}

Array::Array(DType dtype, Shape shape) : type_{dtype, std::move(shape)} {
  int64_t n = checked_numel(type_.shape, nullptr);
  storage_ = std::make_shared<detail::ArrayStorage>();
  storage_->host = std::make_shared<std::byte[]>(static_cast<size_t>(n * dtype_size(dtype)));
}

Array::Array(TensorType type, std::shared_ptr<std::byte[]> bytes) : type_(std::move(type)) {
  storage_ = std::make_shared<detail::ArrayStorage>();
  storage_->host = std::move(bytes);
}

Array Array::from_device(TensorType type, std::shared_ptr<const detail::DeviceBuffer> buffer) {
  Array a(std::move(type), nullptr);
  a.storage_->device = std::move(buffer);
  return a;
}

void Array::assign_device(std::shared_ptr<const detail::DeviceBuffer> buffer) {
  std::lock_guard<std::mutex> lock(storage_->mu);
  storage_->device = std::move(buffer);
  storage_->host.reset();
}

std::byte* Array::host() const {
  std::lock_guard<std::mutex> lock(storage_->mu);
  if (!storage_->host) {
    size_t n = static_cast<size_t>(size() * dtype_size(dtype()));
    std::shared_ptr<std::byte[]> bytes;
    try {
      bytes = std::make_shared_for_overwrite<std::byte[]>(n);
    } catch (const std::bad_alloc&) {
      detail::fail("Array", "out of memory: cannot allocate " + std::to_string(n) + " bytes of host memory to read " +
                                type_.str() + " back from the device");
    }
    if (n) storage_->device->read(bytes.get(), n);  // may throw: then nothing is kept
    storage_->host = std::move(bytes);
  }
  return storage_->host.get();
}

bool Array::on_device() const {
  std::lock_guard<std::mutex> lock(storage_->mu);
  return storage_->device != nullptr;
}

std::shared_ptr<const detail::DeviceBuffer> Array::device_buffer() const {
  std::lock_guard<std::mutex> lock(storage_->mu);
  return storage_->device;
}

Array Array::empty(DType dtype, Shape shape) {
  int64_t n = checked_numel(shape, nullptr);
  return Array(TensorType{dtype, std::move(shape)},
               std::make_shared_for_overwrite<std::byte[]>(static_cast<size_t>(n * dtype_size(dtype))));
}

template <class T>
void Array::assign(std::span<const T> data, const std::source_location& loc) {
  int64_t n = checked_numel(type_.shape, &loc);
  if (static_cast<int64_t>(data.size()) != n) {
    detail::fail("Array",
                 std::to_string(data.size()) + " values given for shape " + shape_str(type_.shape) + ", which needs " +
                     std::to_string(n),
                 &loc);
  }
  storage_ = std::make_shared<detail::ArrayStorage>();
  storage_->host = std::make_shared_for_overwrite<std::byte[]>(static_cast<size_t>(n * dtype_size(type_.dtype)));
  std::byte* bytes = storage_->host.get();
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < data.size(); ++i) bytes[i] = std::byte{data[i] ? uint8_t{1} : uint8_t{0}};
  } else if (n) {
    std::memcpy(bytes, data.data(), data.size_bytes());
  }
}

Array::Array(std::span<const float> data, Shape shape, std::source_location loc) : type_{DType::f32, std::move(shape)} {
  assign(data, loc);
}
Array::Array(std::span<const double> data, Shape shape, std::source_location loc)
    : type_{DType::f64, std::move(shape)} {
  assign(data, loc);
}
Array::Array(std::span<const int32_t> data, Shape shape, std::source_location loc)
    : type_{DType::i32, std::move(shape)} {
  assign(data, loc);
}
Array::Array(const std::vector<bool>& data, Shape shape, std::source_location loc)
    : type_{DType::boolean, std::move(shape)} {
  // std::vector<bool> is packed: copy to one bool per element first.
  std::unique_ptr<bool[]> unpacked(new bool[data.size()]);
  for (size_t i = 0; i < data.size(); ++i) unpacked[i] = data[i];
  assign(std::span<const bool>(unpacked.get(), data.size()), loc);
}

Array::Array(std::span<const Half> data, Shape shape, std::source_location loc) : type_{DType::f16, std::move(shape)} {
  assign(data, loc);
}
Array::Array(std::span<const BFloat16> data, Shape shape, std::source_location loc)
    : type_{DType::bf16, std::move(shape)} {
  assign(data, loc);
}

Array Array::scalar(float v) { return Array(std::span<const float>(&v, 1), {}); }
Array Array::scalar(double v) { return Array(std::span<const double>(&v, 1), {}); }
Array Array::scalar(int32_t v) { return Array(std::span<const int32_t>(&v, 1), {}); }
Array Array::scalar(bool v) { return Array(std::vector<bool>{v}, {}); }
Array Array::scalar(Half v) { return Array(std::span<const Half>(&v, 1), {}); }
Array Array::scalar(BFloat16 v) { return Array(std::span<const BFloat16>(&v, 1), {}); }

template <class T>
std::vector<T> Array::to_vector(std::source_location loc) const {
  if (dtype() != dtype_of<T>()) {
    detail::fail("Array::to_vector",
                 std::string("array is ") + type_.str() + ", asked for " + dtype_name(dtype_of<T>()) + " elements",
                 &loc);
  }
  std::vector<T> out(static_cast<size_t>(size()));
  if constexpr (std::is_same_v<T, bool>) {
    const std::byte* bytes = host();
    for (size_t i = 0; i < out.size(); ++i) out[i] = bytes[i] != std::byte{0};
  } else {
    if (!out.empty()) std::memcpy(out.data(), host(), out.size() * sizeof(T));
  }
  return out;
}
template std::vector<float> Array::to_vector<float>(std::source_location) const;
template std::vector<double> Array::to_vector<double>(std::source_location) const;
template std::vector<int32_t> Array::to_vector<int32_t>(std::source_location) const;
template std::vector<bool> Array::to_vector<bool>(std::source_location) const;
template std::vector<Half> Array::to_vector<Half>(std::source_location) const;
template std::vector<BFloat16> Array::to_vector<BFloat16>(std::source_location) const;

std::vector<double> Array::to_doubles() const {
  std::vector<double> out(static_cast<size_t>(size()));
  const std::byte* p = host();
  for (size_t i = 0; i < out.size(); ++i) {
    switch (dtype()) {
      case DType::f32: {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = v;
        break;
      }
      case DType::f64: {
        double v;
        std::memcpy(&v, p + 8 * i, 8);
        out[i] = v;
        break;
      }
      case DType::i32: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = v;
        break;
      }
      case DType::boolean: out[i] = p[i] != std::byte{0} ? 1.0 : 0.0; break;
      case DType::f16:
      case DType::bf16: {
        uint16_t bits;
        std::memcpy(&bits, p + 2 * i, 2);
        out[i] = dtype() == DType::f16 ? f16_value(bits) : bf16_value(bits);
        break;
      }
    }
  }
  return out;
}

double Array::item(std::source_location loc) const {
  if (size() != 1) {
    detail::fail("Array::item", "array is " + type_.str() + ", expected exactly one element", &loc);
  }
  return to_doubles()[0];
}

const void* Array::data() const { return host(); }

void* Array::mutable_data() {
  std::byte* p = host();
  std::lock_guard<std::mutex> lock(storage_->mu);
  storage_->device.reset();  // about to change: the device copy is stale
  return p;
}

Array Array::clone() const {
  Array out = empty(dtype(), shape());
  size_t n = static_cast<size_t>(size() * dtype_size(dtype()));
  if (n) std::memcpy(out.storage_->host.get(), host(), n);
  return out;
}

std::string Array::str() const { return type_.str() + " " + values_str(); }

std::string Array::values_str() const {
  std::ostringstream os;
  std::vector<double> v = to_doubles();
  const Shape& s = shape();
  std::vector<int64_t> st = row_major_strides(s);
  constexpr int64_t kEdge = 3;  // items shown at each end of a long dimension
  // Nested brackets row-major; long dimensions show their first and last kEdge items.
  auto rec = [&](auto&& self, size_t dim, int64_t offset) -> void {
    if (dim == s.size()) {
      os << v[static_cast<size_t>(offset)];
      return;
    }
    os << "[";
    for (int64_t i = 0; i < s[dim]; ++i) {
      if (i) os << ", ";
      if (s[dim] > 2 * kEdge && i == kEdge) {
        os << "..., ";
        i = s[dim] - kEdge;
      }
      self(self, dim + 1, offset + i * st[dim]);
    }
    os << "]";
  };
  rec(rec, 0, 0);
  return os.str();
}

}  // namespace fluxion
