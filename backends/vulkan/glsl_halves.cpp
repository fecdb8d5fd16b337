// f16 and bf16 in shaders (shader_halves): values live in float registers and are rounded to
// their format after each op that computes them, with integer operations only, so that every
// device rounds to nearest even the same way (a driver's own float16_t conversions may round
// or flush as it likes). In memory they are 16-bit words: uint16_t through 16-bit storage, or,
// on a device without it, halves of 32-bit words stored with compare-and-swap, since the other
// half may belong to another invocation.
#include <string>

#include "backends/vulkan/glsl.h"

namespace fluxion::vulkan {
namespace {

const char* kWords16 = R"(uint fx_ld16(FX_ADDR a, int i) { return fx_ld_u16(a, i); }
void fx_st16(FX_ADDR a, int i, uint x) { fx_st_u16(a, i, x); }
)";
const char* kWords32 = R"(uint fx_ld16(FX_ADDR a, int i) {
  FX_ADDR p = fx_offset(a, uint(2 * i));
  return (fx_ld_u32(fx_align4(p), 0) >> ((fx_low(p) & 2u) * 8u)) & 0xffffu;
}
void fx_st16(FX_ADDR a, int i, uint x) {
  FX_ADDR p = fx_offset(a, uint(2 * i));
  FX_ADDR w = fx_align4(p);
  uint shift = (fx_low(p) & 2u) * 8u;
  uint old = fx_ld_u32(w, 0);
  for (;;) {
    uint seen = fx_atomic_cas_u32(w, 0, old, (old & ~(0xffffu << shift)) | ((x & 0xffffu) << shift));
    if (seen == old) break;
    old = seen;
  }
}
)";

// Exact widening; rounding to nearest even, overflow to infinity from 65520 up, NaN kept quiet
// with its payload's upper bits (as F16C converts on the CPU backend).
const char* kFormats = R"(float fx_f16_float(uint h) {
  uint s = (h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 1023u;
  if (e == 0u) {
    float f = float(m) * 5.9604644775390625e-8;
    return s != 0u ? -f : f;
  }
  return uintBitsToFloat(s | (e == 31u ? 0x7f800000u : (e + 112u) << 23) | (m << 13));
}
uint fx_f16_bits(float x) {
  uint u = floatBitsToUint(x), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return s | 0x7e00u | ((a >> 13) & 0x3ffu);
  if (a >= 0x477ff000u) return s | 0x7c00u;
  if (a >= 0x38800000u) return s | ((a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13);
  int shift = 126 - int(a >> 23);
  if (shift > 24) return s;
  uint m = (a & 0x7fffffu) | 0x800000u, q = m >> uint(shift), r = m & ((1u << uint(shift)) - 1u);
  uint half_ulp = 1u << uint(shift - 1);
  return s | (q + ((r > half_ulp || (r == half_ulp && (q & 1u) != 0u)) ? 1u : 0u));
}
float fx_bf16_float(uint h) { return uintBitsToFloat(h << 16); }
uint fx_bf16_bits(float x) {
  uint u = floatBitsToUint(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u | 0x400000u) >> 16;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}
float fx_round_f16(float x) { return fx_f16_float(fx_f16_bits(x)); }
float fx_round_bf16(float x) { return fx_bf16_float(fx_bf16_bits(x)); }
float fx_ld_f16(FX_ADDR a, int i) { return fx_f16_float(fx_ld16(a, i)); }
void fx_st_f16(FX_ADDR a, int i, float x) { fx_st16(a, i, fx_f16_bits(x)); }
float fx_ld_bf16(FX_ADDR a, int i) { return fx_bf16_float(fx_ld16(a, i)); }
void fx_st_bf16(FX_ADDR a, int i, float x) { fx_st16(a, i, fx_bf16_bits(x)); }
)";

// A wider value as a float rounded to odd (truncated, the last bit set when anything was cut
// off), which a second rounding to 16 bits turns into the value rounded once.
const char* kOddFromInt = R"(float fx_odd_float(int i) {
  uint a = i < 0 ? 0u - uint(i) : uint(i);
  int cut = findMSB(a) - 23;
  if (cut > 0) {
    uint lost = a & ((1u << uint(cut)) - 1u);
    a = (a - lost) | (lost != 0u ? 1u << uint(cut) : 0u);
  }
  float f = float(a);
  return i < 0 ? -f : f;
}
)";
const char* kOddFromDouble = R"(float fx_odd_float(double d) {
  float f = float(d);
  uint b = floatBitsToUint(f);
  if (double(f) != d && !isnan(d) && (b & 1u) == 0u)
    f = uintBitsToFloat(abs(d) > abs(double(f)) ? b + 1u : b - 1u);
  return f;
}
)";

}  // namespace

std::string shader_halves(const ShaderTarget& target) {
  std::string s = target.int16_storage ? kWords16 : kWords32;
  s += kFormats;
  s += kOddFromInt;
  if (target.float64) s += kOddFromDouble;
  return s;
}

}  // namespace fluxion::vulkan
