// The instruction-set extensions a CPU artifact may use, and whether this machine has them,
// read with CPUID (through the compiler's __builtin_cpu_supports) rather than LLVM, which the
// runtime library does not link.
#pragma once

#include <string>
#include <vector>

namespace fluxion::cpu {

// The extensions of `llvm_features` ("+avx2,-avx512f,...", the LLVM subtarget features code was
// generated with) that the runtime can check and that generated code may use: the enabled ones
// among SSE*, AVX*, AVX-512*, FMA, F16C, BMI*, LZCNT, POPCNT, MOVBE and similar.
std::vector<std::string> required_cpu_features(const std::string& llvm_features);

// The names of `required` that this CPU lacks (unknown names count as lacking).
std::vector<std::string> missing_cpu_features(const std::vector<std::string>& required);

}  // namespace fluxion::cpu
