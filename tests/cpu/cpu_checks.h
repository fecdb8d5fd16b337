// Checks shared by the CPU code-generation tests: random f32 inputs, values against the
// interpreter, and the optimised LLVM IR of a program (what the vectoriser made of a kernel).
#pragma once

#include <gtest/gtest.h>

#include <fluxion/fluxion.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/scoped_env.h"
#include "common/test_util.h"

namespace fluxion::testing {

// f32 values uniform in [-range, range].
inline Array uniform_f32(const Shape& shape, uint32_t seed, double range = 1) {
  return make(f32, random_doubles(numel(shape), -range, range, seed), shape);
}

// f on the CPU backend equals f on the interpreter within `tolerance` relative to 1 + |value|.
template <class F, class... A>
void expect_cpu_matches_interpreter(double tolerance, F f, const A&... args) {
  std::vector<double> got = jit(f, Backend::Cpu)(args...).to_doubles();
  std::vector<double> want = jit(f, Backend::Interp)(args...).to_doubles();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tolerance * (1 + std::abs(want[i]))) << "element " << i;
}

// The optimised LLVM IR of f's program, compiled afresh (not from the disk cache).
template <class F, class... A>
std::string optimised_ir(F f, const A&... args) {
  ScopedEnv no_cache("FLUXION_DISK_CACHE", "0");
  ScopedEnv dump("FLUXION_DUMP_LLVM", "1");
  ::testing::internal::CaptureStderr();
  jit(f, Backend::Cpu)(args...);
  return ::testing::internal::GetCapturedStderr();
}

// The text of function `name` in IR printed by optimised_ir ("" if absent).
inline std::string function_ir(const std::string& ir, const std::string& name) {
  for (size_t at = ir.find("@" + name + "("); at != std::string::npos; at = ir.find("@" + name + "(", at + 1)) {
    size_t line = ir.rfind('\n', at);
    line = line == std::string::npos ? 0 : line + 1;
    if (ir.compare(line, 6, "define") != 0) continue;  // a declaration or a call
    size_t end = ir.find("\n}", line);
    return ir.substr(line, end == std::string::npos ? std::string::npos : end - line);
  }
  return "";
}

// The text of the first kernel the entry point calls (kernel 0, in the entry point's module
// or a module of its own) in IR printed by optimised_ir ("" if absent).
inline std::string kernel0_ir(const std::string& ir) {
  std::string entry = function_ir(ir, "fx_entry");
  size_t inlined = entry.find("@kernel0"), own = entry.find("@fx_kernel_");
  size_t at = std::min(inlined, own);
  if (at == std::string::npos) return "";
  size_t end = entry.find_first_of("(), ", at);
  return function_ir(ir, entry.substr(at + 1, end - at - 1));
}

}  // namespace fluxion::testing
