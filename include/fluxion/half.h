// The 16-bit floating-point element types of f16 and bf16 arrays, as host values: IEEE 754
// binary16 (`Half`: 5 exponent bits, 10 fraction bits) and bfloat16 (`BFloat16`: f32's 8
// exponent bits, 7 fraction bits). Each holds its bits; arithmetic is done by converting to
// float or double. Conversions to them round to nearest, ties to even, straight from the double
// (never through float, which could round twice).
#pragma once

#include <cstdint>

namespace fluxion {

// The bits of `v` rounded to binary16: overflow (|v| >= 65520) gives an infinity, NaN a quiet
// NaN of the same sign.
uint16_t f16_bits(double v);
// The value of binary16 bits (exact in double).
double f16_value(uint16_t bits);
// The bits of `v` rounded to bfloat16: overflow gives an infinity, NaN a quiet NaN of the same
// sign.
uint16_t bf16_bits(double v);
// The value of bfloat16 bits (exact in double).
double bf16_value(uint16_t bits);

namespace detail {

// A 16-bit float element: its bits, rounded from a double by Round and read by Value.
template <uint16_t (*Round)(double), double (*Value)(uint16_t)>
struct SixteenBitFloat {
  uint16_t bits = 0;

  SixteenBitFloat() = default;
  explicit SixteenBitFloat(double v) : bits(Round(v)) {}
  static SixteenBitFloat from_bits(uint16_t b) {
    SixteenBitFloat h;
    h.bits = b;
    return h;
  }
  explicit operator double() const { return Value(bits); }
  explicit operator float() const { return static_cast<float>(Value(bits)); }
};

}  // namespace detail

// An f16 element.
using Half = detail::SixteenBitFloat<f16_bits, f16_value>;
// A bf16 element.
using BFloat16 = detail::SixteenBitFloat<bf16_bits, bf16_value>;

}  // namespace fluxion
