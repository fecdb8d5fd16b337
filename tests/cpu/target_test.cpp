// What the CPU backend generates code for (docs/cpu.md, "Targets"): the instruction set it
// reports follows FLUXION_CPU_FEATURES, and its vectors, registers and LLVM features agree. The
// suite runs the CPU tests once more under FLUXION_CPU_FEATURES=avx2 (cpu.avx2.*), where the
// matmul and convolution tests then cover AVX2's tiles on an AVX-512 machine, and on an
// AVX-512-BF16 machine the matmul tests under avx512 (cpu.avx512.matmul), where its bf16
// products take the f32 tiles of a machine without it.
#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <cstdlib>
#include <string>

#include "backends/cpu/native.h"
#include "cpu/strategies.h"

namespace fx = fluxion;

TEST(CpuTarget, ReportsTheInstructionSetAskedForAndItsVectors) {
  fx::CpuTarget t = fx::cpu_target();
  const char* asked = std::getenv("FLUXION_CPU_FEATURES");
  EXPECT_EQ(t.requested, asked && *asked ? asked : "native");
  if (t.requested != "native") {
    EXPECT_EQ(t.isa, t.requested);
  }
  EXPECT_FALSE(t.cpu.empty());
  int bits = t.isa == "avx512" ? 512 : t.isa == "avx2" ? 256 : 128;
  EXPECT_EQ(t.vector_bits, bits);
  EXPECT_EQ(t.vector_registers, t.isa == "avx512" ? 32 : 16);
  EXPECT_EQ(fx::testing::matmul_lanes(fx::f32), bits / 32);
  // The features LLVM is given say the same: nothing above the ISA is on.
  const std::string& f = fx::cpu::host().features;
  EXPECT_EQ(f.find("+avx512f,") != std::string::npos, t.isa == "avx512") << f;
  EXPECT_EQ(f.find("+avx2,") != std::string::npos, t.isa != "sse") << f;
  // bf16 products: the host's AVX-512-BF16 under native only (avx512 asks for AVX-512 without it).
  EXPECT_EQ(t.bf16_products, f.find("+avx512bf16,") != std::string::npos) << f;
  if (t.requested != "native") {
    EXPECT_FALSE(t.bf16_products);
  }
}
