// Rows of an in-memory array copied out by index: subset and the Loader's batches.
#pragma once

#include <cstdint>
#include <span>

#include "fluxion/array.h"

namespace fluxion::data {

// The rows `rows` of `a` (along its first dimension), in that order, in a fresh array.
Array gather_rows(const Array& a, std::span<const int64_t> rows);

}  // namespace fluxion::data
