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

#include "ir/ir.h"
#include "kernel/kernel_ir.h"
#include "runtime/vulkan/shader_target.h"

namespace fluxion::vulkan {

struct KernelShader {
  std::string name;
  std::string glsl;
  std::vector<ir::ValueId> buffers;  // argument entries 1.. in order
  std::vector<bool> written;         // per buffer: the kernel stores into it
  std::array<uint32_t, 3> groups{1, 1, 1};
  // A scatter planned as sorted rows: the shader dispatched first, in one workgroup, to write the
  // index order into the kernel's scratch (scatter_order_shader), which the kernel then reads as
  // its argument after `buffers`. Empty for every other kernel.
  std::string order_glsl;
};

// The GLSL of kernel k of region r, rendering its plan, for a device that can do `target`.
KernelShader emit_kernel(const ir::Region& r, const kernel::RegionSchedule& s, const kernel::Kernel& k,
                         const std::string& name, const ShaderTarget& target);

// The opening's memory access: version, extensions, FX_ADDR, the typed accessors fx_ld_<t>,
// fx_st_<t> (t = f32, i32, u32, u8 with 8-bit storage, u16 with 16-bit storage and halves,
// f64 with shaderFloat64, and shader_halves' for halves) and
// fx_atomic_*, the push constants, fx_addr(k) (argument k's address), fx_word(k), fx_offset,
// and fx_ld8 / fx_st8 for bytes.
std::string shader_storage(const ShaderTarget& target);

// For a target with `halves`: fx_ld_f16 / fx_st_f16 / fx_ld_bf16 / fx_st_bf16 (values in float
// registers), fx_round_f16 / fx_round_bf16 (round a float to the format, to nearest even), and
// fx_odd_float (an int, or a double where the device has them, as a float rounded to odd, so
// that rounding it again to 16 bits rounds once).
std::string shader_halves(const ShaderTarget& target);

// Every shader's opening: shader_storage, then the math library (glsl_math.cpp).
// Without the float-controls execution modes, Vulkan lets a driver drop NaN and infinity
// semantics (lavapipe computes 0.0 / 0.0 = 0): they are requested wherever the device has them.
// `coherent`: memory is declared coherent (for loop shaders, whose invocations read what the
// others stored).
std::string shader_prelude(const ShaderTarget& target, bool coherent = false);

// Helper shaders of the program runner, in workgroups of kWorkgroupSize: copy `count` bytes (arguments: guard, src,
// dst, count); combine guards for a cond (guard, pred, then-flag, else-flag); and a while loop's step (guard = loop
// flag, cond result, loop flag, status word: a nonzero `code` is written when the loop still runs at its last recorded
// iteration).
std::string copy_shader(const ShaderTarget& target, bool words);
std::string cond_guard_shader(const ShaderTarget& target);
std::string while_step_shader(const ShaderTarget& target);
// The index order of a sorted scatter (glsl_scatter.cpp; layout: kernel::scatter_order_words), in
// one workgroup of `workgroup` invocations. Arguments: guard, indices, order; words: the number
// of indices, the result's rows.
std::string scatter_order_shader(const ShaderTarget& target, int64_t workgroup);

// The dispatch grid covering `invocations` in workgroups of `workgroup`: x up to 65535, then y.
std::array<uint32_t, 3> grid(int64_t invocations, int64_t workgroup);

// The shader's workgroup size declaration, `layout(local_size_x = n) in;`.
std::string workgroup_layout(int64_t invocations);

}  // namespace fluxion::vulkan
