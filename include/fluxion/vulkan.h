// Vulkan devices: which ones this machine has, and which one the Vulkan backend runs on.
// docs/vulkan.md describes the selection rules and the environment variables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fluxion {

// What a device offers the Vulkan backend, as its driver reports it, narrowed by
// FLUXION_VULKAN_DISABLE and FLUXION_VULKAN_LIMITS (docs/vulkan.md, "Capabilities").
struct VulkanCapabilities {
  bool vulkan_1_2 = false;             // API version 1.2 or later
  bool buffer_device_address = false;  // bufferDeviceAddress (else buffers through descriptors)
  bool descriptor_indexing = false;    // shaderStorageBufferArrayDynamicIndexing (needed without the above)
  bool int64 = false;                  // shaderInt64
  bool int8_storage = false;           // storageBuffer8BitAccess and shaderInt8
  bool int16_storage = false;          // storageBuffer16BitAccess (f16 and bf16 as 16-bit words)
  bool float64 = false;                // shaderFloat64 (f64 programs are refused without it)
  bool float16 = false;                // shaderFloat16: f16 arithmetic (products allowed to sum in f16)
  bool subgroup_arithmetic = false;    // subgroup arithmetic in compute shaders
  bool timestamps = false;             // timestamps on the compute queue (for profiling)
  // f16 x f16 + f32 matrix products on the device's matrix units (tensor cores) through
  // VK_NV_cooperative_matrix, with shaderFloat16 and vulkanMemoryModel, in fragments of
  // cooperative_m x cooperative_n x cooperative_k (0 when absent). Reported, and used, only
  // where FLUXION_VULKAN_COOPERATIVE_MATRIX is on (docs/vulkan.md, "Cooperative matrices").
  bool cooperative_matrix = false;
  uint32_t cooperative_m = 0, cooperative_n = 0, cooperative_k = 0;
  // Device-local memory the host maps (lavapipe, integrated GPUs): arguments and results are
  // copied in place; otherwise (discrete GPUs) they pass through staging memory.
  bool mapped_device_memory = false;
  uint32_t subgroup_size = 0;
  uint32_t max_workgroup_invocations = 0;
  uint32_t max_shared_memory_bytes = 0;   // workgroup memory per workgroup
  uint32_t max_storage_buffers = 0;       // storage-buffer descriptors per shader stage and per set
  uint32_t max_storage_buffer_range = 0;  // bytes one storage-buffer descriptor covers
};

struct VulkanDeviceInfo {
  int index = 0;             // position in vulkan_devices()
  std::string name;          // e.g. "NVIDIA H100", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string vendor;        // "nvidia", "amd", "intel", "apple", "arm", "qualcomm", "mesa", or the id in hex
  std::string type;          // "discrete", "integrated", "virtual", "cpu", "other"
  uint64_t memory_bytes = 0; // the largest device-local heap
  std::string api_version;   // "1.3.230"
  std::string driver;        // the driver's name and details, e.g. "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"
  std::string driver_version;  // dotted, decoded the vendor's way (NVIDIA: "535.104.5.0")
  bool usable = false;         // has every capability the backend requires
  VulkanCapabilities capabilities;
  // "full": every capability the backend uses; "reduced": usable, with the fallbacks listed;
  // "unusable": `missing` names what it lacks.
  std::string tier;
  std::vector<std::string> fallbacks;  // e.g. "no subgroup arithmetic: reductions combine in workgroup memory"
  std::vector<std::string> missing;    // required capabilities it lacks, e.g. "bufferDeviceAddress"
};

// Every Vulkan device present, usable or not; empty when there is no Vulkan loader or driver.
// Raises Error only for a malformed FLUXION_VULKAN_DISABLE or FLUXION_VULKAN_LIMITS, or under
// FLUXION_VULKAN_VALIDATION=1 without the validation layer.
std::vector<VulkanDeviceInfo> vulkan_devices();

// Chooses the device the Vulkan backend will use, by index in vulkan_devices() or by a
// case-insensitive substring of its name. Only before the backend's first use (it then keeps
// its device); raises Error for an invalid index, a name that matches nothing, or a late call.
// Without a choice: FLUXION_VULKAN_DEVICE (index or name), else the first usable discrete GPU,
// then integrated, virtual, and last a CPU implementation such as lavapipe.
void select_vulkan_device(int index);
void select_vulkan_device(const std::string& name);

// The device the Vulkan backend runs on (opening it if needed). Raises Error when there is no
// usable Vulkan device.
VulkanDeviceInfo vulkan_device();

}  // namespace fluxion
