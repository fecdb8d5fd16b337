// Vulkan devices: which ones this machine has, and which one the Vulkan backend runs on.
// docs/vulkan.md describes the selection rules and the environment variables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fluxion {

struct VulkanDeviceInfo {
  int index = 0;             // position in vulkan_devices()
  std::string name;          // e.g. "NVIDIA H100", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string vendor;        // "nvidia", "amd", "intel", "apple", "arm", "qualcomm", "mesa", or the id in hex
  std::string type;          // "discrete", "integrated", "virtual", "cpu", "other"
  uint64_t memory_bytes = 0; // the largest device-local heap
  std::string api_version;   // "1.3.230"
  bool usable = false;       // has what Fluxion needs (Vulkan 1.2, buffer device address, 8-bit storage)
};

// Every Vulkan device present, usable or not; empty (never an error) when there is no Vulkan
// loader or driver.
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
