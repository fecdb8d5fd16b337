// What a physical device offers the backend (fluxion::VulkanCapabilities), and the emulation
// variables that narrow it, so that every fallback runs on a device that has the feature:
//   FLUXION_VULKAN_DISABLE=float64,subgroup_arithmetic,...   capabilities treated as absent
//   FLUXION_VULKAN_LIMITS=invocations=128,shared=16384,storage_buffers=8   limits lowered to these
//   FLUXION_VULKAN_PROFILE=reduced|mobile                     a named set of both
// The backend then neither uses nor enables what is disabled, so the validation layer reports
// any use that slips through.
#pragma once

#include <vulkan/vulkan.h>

#include "fluxion/vulkan.h"

namespace fluxion::vulkan {

// Descriptors used to address memory blocks on a device without buffer device addresses.
uint32_t descriptor_slots(const VulkanCapabilities& c);

// Fills info.capabilities (emulation applied), info.usable, info.tier, info.fallbacks and
// info.missing. Raises Error for a malformed emulation variable.
void read_capabilities(VkInstance instance, VkPhysicalDevice physical, VulkanDeviceInfo& info);

}  // namespace fluxion::vulkan
