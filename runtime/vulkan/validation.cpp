// The validation layer and its messenger (validation.h).
#include "runtime/vulkan/validation.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "fluxion/error.h"
#include "runtime/vulkan/context.h"
#include "support/settings.h"

namespace fluxion::vulkan {
namespace {

constexpr const char* kLayer = "VK_LAYER_KHRONOS_validation";

// Never destroyed: a message may arrive while other statics are being destroyed at exit.
struct State {
  std::mutex mu;
  std::function<void(const std::string&)> handler;            // guarded by mu
  std::map<VkInstance, VkDebugUtilsMessengerEXT> messengers;  // guarded by mu
};
State& state() {
  static State* s = new State;
  return *s;
}

// Synchronization validation takes a dispatch's access through a descriptor to be the
// descriptor's whole range. Without buffer device addresses a descriptor covers a whole memory
// block (block_descriptors.h), so two dispatches using disjoint parts of one block are reported
// as a hazard even though nothing overlaps. Such a dispatch-after-dispatch report is left to the
// barrier audit, which compares byte ranges and runs whenever validation does in that mode
// (executable.cpp); every other message, copies and host accesses included, still counts.
bool whole_block_hazard(const char* id, const char* message) {
  if (!id || !message || std::strncmp(id, "SYNC-HAZARD", 11) != 0) return false;
  std::string m = message;
  return m.find("type: VK_DESCRIPTOR_TYPE_STORAGE_BUFFER") != std::string::npos &&
         m.find("(usage: SYNC_COMPUTE_SHADER_SHADER_STORAGE_") != std::string::npos &&
         m.find("prior_usage: SYNC_COMPUTE_SHADER_SHADER_STORAGE_") != std::string::npos;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT,
                                          const VkDebugUtilsMessengerCallbackDataEXT* data, void*) {
  if (whole_block_hazard(data->pMessageIdName, data->pMessage)) return VK_FALSE;
  std::string text = std::string(severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning") +
                     " [" + (data->pMessageIdName ? data->pMessageIdName : "") + "] " +
                     (data->pMessage ? data->pMessage : "");
  std::fprintf(stderr, "fluxion: Vulkan validation %s\n", text.c_str());
  std::function<void(const std::string&)> h;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    h = state().handler;
  }
  if (h) h(text);
  return VK_FALSE;  // the call goes on as it would without the layer
}

bool layer_installed() {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (const VkLayerProperties& l : layers) {
    if (std::strcmp(l.layerName, kLayer) == 0) return true;
  }
  return false;
}

VkDebugUtilsMessengerCreateInfoEXT messenger_info() {
  auto mi = vk_struct<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
  mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mi.pfnUserCallback = on_message;
  return mi;
}

}  // namespace

bool validation_requested() { return support::enabled(support::Setting::vulkan_validation); }

bool gpu_assisted_validation_requested() { return support::text(support::Setting::vulkan_validation) == "gpu"; }

VkInstance create_validated_instance(VkInstanceCreateInfo ci) {
  VkInstance instance = VK_NULL_HANDLE;
  if (!validation_requested())
    return vkCreateInstance(&ci, nullptr, &instance) == VK_SUCCESS ? instance : VK_NULL_HANDLE;
  if (!layer_installed()) {
    detail::fail("vulkan", std::string("FLUXION_VULKAN_VALIDATION is set but the validation layer ") + kLayer +
                               " is not installed (Debian package vulkan-validationlayers)");
  }
  const char* layers[] = {kLayer};
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  ci.enabledLayerCount = 1;
  ci.ppEnabledLayerNames = layers;
  ci.enabledExtensionCount = 1;
  ci.ppEnabledExtensionNames = extensions;
  // GPU-assisted validation instruments shaders to check every access through a buffer device
  // address against the buffers that exist (what synchronization validation cannot see); it
  // is slow, so it is asked for apart (FLUXION_VULKAN_VALIDATION=gpu).
  VkValidationFeatureEnableEXT sync[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeatureEnableEXT gpu[] = {VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_EXT,
                                        VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_RESERVE_BINDING_SLOT_EXT};
  auto features = vk_struct<VkValidationFeaturesEXT>(VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT);
  bool gpu_assisted = gpu_assisted_validation_requested();
  features.enabledValidationFeatureCount = gpu_assisted ? 2 : 1;
  features.pEnabledValidationFeatures = gpu_assisted ? gpu : sync;
  // Chained to the create info too, so that vkCreateInstance and vkDestroyInstance are checked.
  VkDebugUtilsMessengerCreateInfoEXT mi = messenger_info();
  features.pNext = &mi;
  mi.pNext = ci.pNext;
  ci.pNext = &features;
  if (vkCreateInstance(&ci, nullptr, &instance) != VK_SUCCESS) return VK_NULL_HANDLE;
  auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
      vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
  VkDebugUtilsMessengerCreateInfoEXT own = messenger_info();
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  if (!create || create(instance, &own, nullptr, &messenger) != VK_SUCCESS) {
    vkDestroyInstance(instance, nullptr);
    detail::fail("vulkan", "FLUXION_VULKAN_VALIDATION is set but the debug messenger could not be created");
  }
  std::lock_guard<std::mutex> lock(state().mu);
  state().messengers[instance] = messenger;
  return instance;
}

void destroy_validated_instance(VkInstance instance) {
  if (!instance) return;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  {
    std::lock_guard<std::mutex> lock(state().mu);
    auto it = state().messengers.find(instance);
    if (it != state().messengers.end()) {
      messenger = it->second;
      state().messengers.erase(it);
    }
  }
  if (messenger) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance, messenger, nullptr);
  }
  vkDestroyInstance(instance, nullptr);
}

void set_validation_handler(std::function<void(const std::string&)> h) {
  std::lock_guard<std::mutex> lock(state().mu);
  state().handler = std::move(h);
}

}  // namespace fluxion::vulkan
