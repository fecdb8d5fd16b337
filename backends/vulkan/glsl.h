// Kernel IR to GLSL compute shaders (docs/vulkan.md, "Shader generation"). A kernel reads and
// writes its buffers through addresses (buffer device addresses, or descriptor slots and
// offsets: glsl_storage.cpp): its push constants hold the address of the program's io table and
// of the dispatch's argument table, whose entry 0 is the guard flag (the kernel does nothing
// when it is 0: a branch not taken, a while loop that has ended) and whose entries 1.. locate
// the kernel's buffers.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "jit/ir/ir.h"
#include "jit/kernel/kernel_ir.h"

namespace fluxion::vulkan {

inline constexpr uint32_t kWorkgroupSize = 64;

// What the device's shaders may use.
struct ShaderTarget {
  bool int64 = true;  // shaderInt64: addresses as uint64_t (else as uvec2)
  // 0: buffers through buffer device addresses; else (no bufferDeviceAddress) through an array
  // of this many storage-buffer descriptors, one per memory block.
  uint32_t descriptor_slots = 0;
  bool int8_storage = true;   // 8-bit storage and integers: bytes as uint8_t (else in 32-bit words)
  bool float64 = false;       // shaderFloat64: f64 arithmetic (else f64 programs are refused)
  bool preserve_nan32 = false;  // shaderSignedZeroInfNanPreserveFloat32: IEEE NaN/Inf/-0 in f32
  bool preserve_nan64 = false;  // the same for f64
  bool subgroup_arithmetic = false;  // subgroupAdd and friends in compute shaders
  uint32_t max_shared_bytes = 16384;  // workgroup memory per workgroup (Vulkan guarantees 16 KiB)
  // Addresses are 64-bit integers in shaders (else uvec2 pairs of words).
  bool addresses64() const { return int64 && descriptor_slots == 0; }
};

struct KernelShader {
  std::string name;
  std::string glsl;
  std::vector<ir::ValueId> buffers;  // argument entries 1.. in order
  std::vector<bool> written;         // per buffer: the kernel stores into it
  std::array<uint32_t, 3> groups{1, 1, 1};
  // How the kernel maps onto invocations (Kernel::strategy; docs/vulkan.md): "per-index",
  // "direct" (a convolution, one output element per invocation), "tiles", "workgroup-rows" or
  // "subgroup-rows" (reductions).
  std::string strategy;
};

// The GLSL of kernel k of region r for a device that can do `target`.
KernelShader emit_kernel(const ir::Region& r, const kernel::RegionSchedule& s, const kernel::Kernel& k,
                         const std::string& name, const ShaderTarget& target);

// The opening's memory access: version, extensions, FX_ADDR, the typed accessors fx_ld_<t>,
// fx_st_<t> (t = f32, i32, u32, u8 with 8-bit storage, f64 with shaderFloat64) and
// fx_atomic_*, the push constants, fx_addr(k) (argument k's address), fx_word(k), fx_offset,
// and fx_ld8 / fx_st8 for bytes.
std::string shader_storage(const ShaderTarget& target);

// Every shader's opening: shader_storage, then the math library (glsl_math.cpp).
// Without the float-controls execution modes, Vulkan lets a driver drop NaN and infinity
// semantics (lavapipe computes 0.0 / 0.0 = 0): they are requested wherever the device has them.
// `coherent`: memory is declared coherent (for loop shaders, whose invocations read what the
// others stored).
std::string shader_prelude(const ShaderTarget& target, bool coherent = false);

// Helper shaders of the program runner: copy `count` bytes (arguments: guard, src, dst, count);
// combine guards for a cond (guard, pred, then-flag, else-flag); and a while loop's step
// (guard = loop flag, cond result, loop flag, status word: a nonzero `code` is written when the
// loop still runs at its last recorded iteration).
std::string copy_shader(const ShaderTarget& target, bool words);
std::string cond_guard_shader(const ShaderTarget& target);
std::string while_step_shader(const ShaderTarget& target);

// The dispatch grid covering `invocations` workgroup-size invocations: x up to 65535, then y.
std::array<uint32_t, 3> grid(int64_t invocations);

}  // namespace fluxion::vulkan
