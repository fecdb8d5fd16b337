// The line every benchmark prints first: what the CPU backend generated code for, so that a
// figure is never read without its instruction set (docs/performance.md).
#pragma once

#include <fluxion/fluxion.h>

#include <string>

namespace bench {

inline std::string cpu_target_line() {
  fluxion::CpuTarget t = fluxion::cpu_target();
  auto kib = [](int64_t b) { return b > 0 ? std::to_string(b >> 10) + " KiB" : std::string("unknown"); };
  return "CPU code: " + t.isa + " on " + t.cpu + " (FLUXION_CPU_FEATURES=" + t.requested + "), " +
         std::to_string(t.vector_bits) + "-bit vectors, " + std::to_string(t.vector_registers) +
         " vector registers, L1d " + kib(t.l1d_bytes) + ", L2 " + kib(t.l2_bytes) +
         (t.bf16_products ? ", bf16 products (AVX-512-BF16)" : "");
}

}  // namespace bench
