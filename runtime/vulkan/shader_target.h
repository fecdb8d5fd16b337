// What a device's shaders may use: the capability tier the shader generator targets, which an
// exported Vulkan program records and a loading device must offer.
#pragma once

#include <compare>
#include <cstdint>

namespace fluxion::vulkan {

inline constexpr uint32_t kWorkgroupSize = 64;

// What the device's shaders may use.
struct ShaderTarget {
  bool int64 = true;  // shaderInt64: addresses as uint64_t (else as uvec2)
  // 0: buffers through buffer device addresses; else (no bufferDeviceAddress) through an array
  // of this many storage-buffer descriptors, one per memory block.
  uint32_t descriptor_slots = 0;
  bool int8_storage = true;           // 8-bit storage and integers: bytes as uint8_t (else in 32-bit words)
  bool int16_storage = true;          // 16-bit storage: f16 and bf16 as uint16_t (else in 32-bit words)
  bool halves = false;                // the program has f16 or bf16 values: their accessors are declared
  bool float64 = false;               // shaderFloat64: f64 arithmetic (else f64 programs are refused)
  bool float16 = false;               // shaderFloat16: f16 arithmetic (a product's f16 sums)
  bool preserve_nan32 = false;        // shaderSignedZeroInfNanPreserveFloat32: IEEE NaN/Inf/-0 in f32
  bool preserve_nan64 = false;        // the same for f64
  bool subgroup_arithmetic = false;   // subgroupAdd and friends in compute shaders
  uint32_t max_shared_bytes = 16384;  // workgroup memory per workgroup (Vulkan guarantees 16 KiB)
  // The f16 fragments of VK_NV_cooperative_matrix, rows x columns x depth (0: none): products
  // planned CooperativeTiles multiply them on the device's matrix units.
  uint32_t cooperative_m = 0, cooperative_n = 0, cooperative_k = 0;
  bool cooperative() const { return cooperative_m > 0; }
  // Addresses are 64-bit integers in shaders (else uvec2 pairs of words).
  bool addresses64() const { return int64 && descriptor_slots == 0; }
  // Ordered, so that what is made per target (the shader prelude) can be kept by target.
  auto operator<=>(const ShaderTarget&) const = default;
};

}  // namespace fluxion::vulkan
