// What the CPU strategy tests need to predict a kernel's code path: the kernel listing's
// strategies, the vector lanes the matrix-product tiles have on this machine and its vector
// registers.
#pragma once

#include <fluxion/fluxion.h>

#include "backends/cpu/native.h"
#include "common/kernel_listing.h"

namespace fluxion::testing {

// Vector lanes of the CPU's matrix-product tiles for elements of dtype t.
inline int matmul_lanes(DType t) { return cpu::host().matmul_vector_bytes / static_cast<int>(dtype_size(t)); }
// The vector registers the CPU code may use.
inline int vector_registers() { return cpu::host().vector_registers; }
// Whether products of bf16 operands run as AVX-512-BF16 dot products (Strategy::Bf16Tiles).
inline bool bf16_products() { return cpu::host().bf16_products; }

}  // namespace fluxion::testing
