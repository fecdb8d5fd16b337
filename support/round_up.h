// Rounding up: a size to a multiple (an alignment, a block size), a quotient to the next
// integer (how many blocks cover a size).
#pragma once

namespace fluxion::support {

// The least integer q with q * divisor >= n, for n >= 0 and divisor > 0.
template <class T>
constexpr T ceil_div(T n, T divisor) {
  return (n + divisor - 1) / divisor;
}

// The least multiple of `multiple` (> 0) that is at least `n` (>= 0).
template <class T>
constexpr T round_up(T n, T multiple) {
  return ceil_div(n, multiple) * multiple;
}

}  // namespace fluxion::support
