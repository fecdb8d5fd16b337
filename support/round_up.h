// Rounding a size up to a multiple (an alignment, a block size).
#pragma once

namespace fluxion {

// The least multiple of `multiple` (> 0) that is at least `n` (>= 0).
template <class T>
constexpr T round_up(T n, T multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

}  // namespace fluxion
