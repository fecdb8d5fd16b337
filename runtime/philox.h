// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
// counter-based generator, so element i of a draw is a pure function of (key, i) and any
// backend can compute it independently. Header-only so every backend shares one definition.
#pragma once

#include <array>
#include <cstdint>

#include "fluxion/dtype.h"

namespace fluxion::runtime::philox {

using Counter = std::array<uint32_t, 4>;
using Key = std::array<uint32_t, 2>;

inline Counter philox4x32_10(Counter c, Key k) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
    k = {k[0] + kW0, k[1] + kW1};
  }
  return c;
}

// The bits of word 0 a uniform draw of one word keeps: the dtype's significant bits, so that
// (w0 >> (32 - bits)) * 2^-bits is exact and below 1. f64 draws 53 bits from two words.
inline int uniform_bits(DType t) { return t == DType::f16 ? 11 : t == DType::bf16 ? 8 : 24; }

}  // namespace fluxion::runtime::philox
