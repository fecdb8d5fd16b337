// Rounding to the 16-bit formats. The significand is scaled by a power of two into an integer
// range, which is exact in double, and rounded there by the default rounding mode (to nearest,
// ties to even): one rounding, whatever the magnitude.
#include "fluxion/half.h"

#include <cmath>
#include <cstring>

namespace fluxion {
namespace {

// A binary format with `fraction` stored fraction bits and exponents down to `min_exponent`
// (that of the smallest normal number) and up to `max_exponent`.
struct Format {
  int fraction;
  int min_exponent;
  int max_exponent;
  uint16_t quiet_nan;
};

constexpr Format kF16{10, -14, 15, 0x7e00};
constexpr Format kBF16{7, -126, 127, 0x7fc0};

uint16_t round_to_bits(const Format& f, double v) {
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const int exponent_shift = f.fraction;
  const uint16_t infinity = static_cast<uint16_t>((f.max_exponent - f.min_exponent + 2) << exponent_shift);
  if (std::isnan(v)) return sign | f.quiet_nan;
  double a = std::fabs(v);
  if (std::isinf(a)) return sign | infinity;
  if (a < std::ldexp(1.0, f.min_exponent)) {
    // Subnormal: units of the smallest subnormal; rounding up to 2^fraction units gives the
    // smallest normal number, whose encoding is the same integer.
    double units = std::nearbyint(std::ldexp(a, f.fraction - f.min_exponent));
    return sign | static_cast<uint16_t>(units);
  }
  int e = std::ilogb(a);
  double significand = std::nearbyint(std::ldexp(a, f.fraction - e));
  if (significand == std::ldexp(1.0, f.fraction + 1)) {
    significand /= 2;
    ++e;
  }
  if (e > f.max_exponent) return sign | infinity;
  auto biased = static_cast<uint16_t>(e - f.min_exponent + 1);
  auto stored = static_cast<uint16_t>(significand - std::ldexp(1.0, f.fraction));
  return sign | static_cast<uint16_t>(biased << exponent_shift) | stored;
}

}  // namespace

uint16_t f16_bits(double v) { return round_to_bits(kF16, v); }
uint16_t bf16_bits(double v) { return round_to_bits(kBF16, v); }

double f16_value(uint16_t bits) {
  double sign = (bits & 0x8000) ? -1.0 : 1.0;
  int biased = (bits >> 10) & 0x1f;
  int fraction = bits & 0x3ff;
  if (biased == 0x1f && fraction) {  // NaN: the payload (quiet bit first) at the top of double's
    uint64_t wide = (static_cast<uint64_t>(bits & 0x8000) << 48) | (uint64_t{0x7ff} << 52) |
                    (static_cast<uint64_t>(fraction) << 42);
    double nan;
    std::memcpy(&nan, &wide, sizeof nan);
    return nan;
  }
  if (biased == 0x1f) return sign * INFINITY;
  if (biased == 0) return sign * std::ldexp(fraction, -24);
  return sign * std::ldexp(fraction + 1024, biased - 25);
}

double bf16_value(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

}  // namespace fluxion
