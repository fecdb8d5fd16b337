// Element types and shapes: the vocabulary shared by the DSL, the IR and every backend.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fluxion {

// f16 is IEEE binary16, bf16 bfloat16 (f32's exponent range, 8 significant bits); arrays hold
// them as fluxion::Half and fluxion::BFloat16 (fluxion/half.h).
enum class DType : uint8_t { f32, f64, i32, boolean, f16, bf16 };

inline constexpr DType f32 = DType::f32;
inline constexpr DType f64 = DType::f64;
inline constexpr DType i32 = DType::i32;
inline constexpr DType boolean = DType::boolean;
inline constexpr DType f16 = DType::f16;
inline constexpr DType bf16 = DType::bf16;
// The last value of DType: a dtype number read from a file or a description is at most this.
inline constexpr DType kLastDType = DType::bf16;

// The name used in IR text and error messages: "f32", "f64", "i32", "bool", "f16", "bf16".
const char* dtype_name(DType t);
// Bytes per element in host memory (bool is one byte).
int64_t dtype_size(DType t);
inline bool is_half(DType t) { return t == DType::f16 || t == DType::bf16; }
inline bool is_float(DType t) { return t == DType::f32 || t == DType::f64 || is_half(t); }
inline bool is_numeric(DType t) { return t != DType::boolean; }

using Shape = std::vector<int64_t>;

// Number of elements (1 for a rank-0 shape).
int64_t numel(const Shape& s);
// "[2,3]"; "[]" for a scalar.
std::string shape_str(const Shape& s);
// Row-major strides in elements.
std::vector<int64_t> row_major_strides(const Shape& s);

// A value's static type: dtype plus shape. Printed "f32[2,3]".
struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  friend bool operator==(const TensorType&, const TensorType&) = default;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return fluxion::numel(shape); }
  std::string str() const;
};

}  // namespace fluxion
