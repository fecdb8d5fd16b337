// Running under the Khronos validation layer (FLUXION_VULKAN_VALIDATION=1; docs/vulkan.md):
// every instance Fluxion creates then enables VK_LAYER_KHRONOS_validation with core and
// synchronization validation, and a VK_EXT_debug_utils messenger that hands every warning or
// error message to the validation handler (stderr, and whatever a test installed).
#pragma once

#include <vulkan/vulkan.h>

#include <functional>
#include <string>

namespace fluxion::vulkan {

// Whether FLUXION_VULKAN_VALIDATION is on (support/settings.def).
bool validation_requested();
// Whether it is `gpu`: GPU-assisted validation (buffer device address bounds checks in the
// shaders) instead of synchronization validation.
bool gpu_assisted_validation_requested();

// vkCreateInstance with `ci`, plus the validation layer and its messenger when requested
// (Error when the layer is not installed). VK_NULL_HANDLE when the driver refuses the instance.
VkInstance create_validated_instance(VkInstanceCreateInfo ci);
// Destroys an instance made by create_validated_instance, its messenger first.
void destroy_validated_instance(VkInstance instance);

// Called with each validation message (after it is printed to stderr); tests install one that
// fails the running test. Messages arrive on the thread that made the offending call.
void set_validation_handler(std::function<void(const std::string&)> handler);

}  // namespace fluxion::vulkan
