// GLSL compute shaders to SPIR-V: glslang's C++ API in-process, then SPIRV-Tools' validator and
// its performance passes. Every module a program uses passes validation before it reaches the
// driver.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fluxion::vulkan {

// Compiles `glsl` (a complete compute shader) to optimised, validated SPIR-V for Vulkan 1.2.
// Raises Error with glslang's or the validator's message and the numbered source on failure
// (a code-generator bug, never the user's).
std::vector<uint32_t> compile_glsl(const std::string& glsl, const std::string& name);

// compile_glsl through the on-disk cache (runtime/disk_cache.h): the SPIR-V stored under the
// whole GLSL text and the glslang version, revalidated when loaded; compiled and stored when
// missing. A hit counts in counters().disk_cache_hits.
std::vector<uint32_t> compile_glsl_cached(const std::string& glsl, const std::string& name);

// SPIRV-Tools' validator on `spirv` for Vulkan 1.2; the empty string when valid, else its
// message. Tests call it on every module they compile.
std::string validate_spirv(const std::vector<uint32_t>& spirv);

}  // namespace fluxion::vulkan
