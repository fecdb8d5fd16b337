// Reading a device's capabilities and narrowing them by the emulation variables (docs/vulkan.md,
// "Capabilities").
#include "runtime/vulkan/capabilities.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "fluxion/error.h"
#include "runtime/vulkan/context.h"
#include "runtime/vulkan/shader_target.h"
#include "support/settings.h"
#include "support/split.h"

namespace fluxion::vulkan {
namespace {

// The workgroup size every shader uses (kWorkgroupSize).
constexpr uint32_t kInvocationsUsed = kWorkgroupSize;
// Without buffer device addresses: the fewest descriptors worth running with (two pools' first
// blocks and room to grow), and the most used (a 64 MiB block each: 4 GiB).
constexpr uint32_t kMinDescriptorSlots = 4;
constexpr uint32_t kMaxDescriptorSlots = 64;

// The named profiles: what FLUXION_VULKAN_PROFILE expands to before the other two variables.
struct Profile {
  const char* name;
  const char* disable;
  const char* limits;
};
constexpr Profile kProfiles[] = {
    {"reduced", "int64,int8_storage,int16_storage,float16,subgroup_arithmetic,timestamps",
     "invocations=128,shared=16384"},
    {"mobile",
     "int64,float64,float16,buffer_device_address,int8_storage,int16_storage,subgroup_arithmetic,timestamps,"
     "mapped_device_memory",
     "invocations=128,shared=16384"},
};

void disable(VulkanCapabilities& c, const std::string& what, const std::string& source) {
  struct Flag {
    const char* name;
    bool VulkanCapabilities::*field;
  };
  static constexpr Flag kFlags[] = {{"buffer_device_address", &VulkanCapabilities::buffer_device_address},
                                    {"int64", &VulkanCapabilities::int64},
                                    {"int8_storage", &VulkanCapabilities::int8_storage},
                                    {"int16_storage", &VulkanCapabilities::int16_storage},
                                    {"float64", &VulkanCapabilities::float64},
                                    {"float16", &VulkanCapabilities::float16},
                                    {"subgroup_arithmetic", &VulkanCapabilities::subgroup_arithmetic},
                                    {"timestamps", &VulkanCapabilities::timestamps},
                                    {"cooperative_matrix", &VulkanCapabilities::cooperative_matrix},
                                    {"mapped_device_memory", &VulkanCapabilities::mapped_device_memory}};
  std::string known;
  for (const Flag& f : kFlags) {
    if (what == f.name) {
      c.*f.field = false;
      return;
    }
    known += std::string(known.empty() ? "" : ", ") + f.name;
  }
  detail::fail("vulkan", source + ": unknown capability '" + what + "'; expected a comma-separated list of " + known);
}

void limit(VulkanCapabilities& c, const std::string& item, const std::string& source) {
  size_t eq = item.find('=');
  std::string key = item.substr(0, eq);
  char* end = nullptr;
  unsigned long long v = eq == std::string::npos ? 0 : std::strtoull(item.c_str() + eq + 1, &end, 10);
  bool number = eq != std::string::npos && end && *end == '\0' && eq + 1 < item.size();
  uint32_t* field = key == "invocations"       ? &c.max_workgroup_invocations
                    : key == "shared"          ? &c.max_shared_memory_bytes
                    : key == "storage_buffers" ? &c.max_storage_buffers
                                               : nullptr;
  if (!field || !number) {
    detail::fail("vulkan", source + ": '" + item +
                               "' is not a limit; expected invocations=<n>, shared=<bytes> or storage_buffers=<n>, "
                               "comma-separated");
  }
  *field = std::min<uint32_t>(*field, static_cast<uint32_t>(std::min<unsigned long long>(v, UINT32_MAX)));
}

void emulate(VulkanCapabilities& c) {
  using support::Setting;
  // The setting admits only the profiles' names (support/settings.def).
  std::string profile = support::text(Setting::vulkan_profile);
  for (const Profile& p : kProfiles) {
    if (profile != p.name) continue;
    for (const std::string& d : support::split(p.disable, ',')) disable(c, d, "FLUXION_VULKAN_PROFILE");
    for (const std::string& l : support::split(p.limits, ',')) limit(c, l, "FLUXION_VULKAN_PROFILE");
  }
  for (const std::string& d : support::items(Setting::vulkan_disable)) disable(c, d, "FLUXION_VULKAN_DISABLE");
  for (const std::string& l : support::items(Setting::vulkan_limits)) limit(c, l, "FLUXION_VULKAN_LIMITS");
}

bool has_extension(VkPhysicalDevice physical, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> all(n);
  vkEnumerateDeviceExtensionProperties(physical, nullptr, &n, all.data());
  return std::any_of(all.begin(), all.end(),
                     [&](const VkExtensionProperties& e) { return std::string(e.extensionName) == name; });
}

// The f16 x f16 + f32 fragment the device multiplies in a subgroup, 16 x 16 x 16 where it
// offers that, else the first 16-row, 16-deep one (NVIDIA also offers 16 x 8 x 16); false when
// it has none or no cooperative matrices in compute shaders.
bool read_cooperative_matrix(VkInstance instance, VkPhysicalDevice physical, VulkanCapabilities& c) {
  if (!has_extension(physical, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) return false;
  auto coop = vk_struct<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  auto f12 = vk_struct<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  f12.pNext = &coop;
  auto f = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  f.pNext = &f12;
  vkGetPhysicalDeviceFeatures2(physical, &f);
  auto stages = vk_struct<VkPhysicalDeviceCooperativeMatrixPropertiesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV);
  auto p2 = vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  p2.pNext = &stages;
  vkGetPhysicalDeviceProperties2(physical, &p2);
  if (!coop.cooperativeMatrix || !f12.shaderFloat16 || !f12.vulkanMemoryModel ||
      !(stages.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT))
    return false;
  auto list = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (!list) return false;
  uint32_t n = 0;
  list(physical, &n, nullptr);
  std::vector<VkCooperativeMatrixPropertiesNV> shapes(
      n, vk_struct<VkCooperativeMatrixPropertiesNV>(VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV));
  list(physical, &n, shapes.data());
  const VkCooperativeMatrixPropertiesNV* chosen = nullptr;
  for (const VkCooperativeMatrixPropertiesNV& s : shapes) {
    bool f16_f32 = s.AType == VK_COMPONENT_TYPE_FLOAT16_NV && s.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                   s.CType == VK_COMPONENT_TYPE_FLOAT32_NV && s.DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                   s.scope == VK_SCOPE_SUBGROUP_NV && s.MSize == 16 && s.KSize == 16 && s.NSize > 0;
    if (f16_f32 && (!chosen || s.NSize == 16)) chosen = &s;
  }
  if (!chosen) return false;
  c.cooperative_m = chosen->MSize;
  c.cooperative_n = chosen->NSize;
  c.cooperative_k = chosen->KSize;
  return true;
}

}  // namespace

uint32_t descriptor_slots(const VulkanCapabilities& c) { return std::min(c.max_storage_buffers, kMaxDescriptorSlots); }

void read_capabilities(VkInstance instance, VkPhysicalDevice physical, VulkanDeviceInfo& info) {
  VkPhysicalDeviceProperties p;
  vkGetPhysicalDeviceProperties(physical, &p);
  VulkanCapabilities& c = info.capabilities;
  c.vulkan_1_2 = p.apiVersion >= VK_API_VERSION_1_2;
  c.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  c.max_shared_memory_bytes = p.limits.maxComputeSharedMemorySize;
  c.max_storage_buffers =
      std::min(p.limits.maxPerStageDescriptorStorageBuffers, p.limits.maxDescriptorSetStorageBuffers);
  c.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  if (c.vulkan_1_2) {
    auto f12 = vk_struct<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    auto f11 = vk_struct<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
    f12.pNext = &f11;
    auto f = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    f.pNext = &f12;
    vkGetPhysicalDeviceFeatures2(physical, &f);
    c.int16_storage = f11.storageBuffer16BitAccess;
    c.buffer_device_address = f12.bufferDeviceAddress;
    c.int8_storage = f12.storageBuffer8BitAccess && f12.shaderInt8;
    c.int64 = f.features.shaderInt64;
    c.float64 = f.features.shaderFloat64;
    c.float16 = f12.shaderFloat16;
    c.descriptor_indexing = f.features.shaderStorageBufferArrayDynamicIndexing;
    auto sub = vk_struct<VkPhysicalDeviceSubgroupProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
    auto p2 = vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    p2.pNext = &sub;
    vkGetPhysicalDeviceProperties2(physical, &p2);
    c.subgroup_size = sub.subgroupSize;
    c.subgroup_arithmetic = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                            (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                            (sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT);
  }
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qs(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, qs.data());
  for (const VkQueueFamilyProperties& q : qs) {
    if (q.queueFlags & VK_QUEUE_COMPUTE_BIT) {
      c.timestamps = q.timestampValidBits > 0 && p.limits.timestampPeriod > 0;
      break;
    }
  }
  // The device pool takes the first device-local memory type (memory.cpp).
  VkPhysicalDeviceMemoryProperties memory;
  vkGetPhysicalDeviceMemoryProperties(physical, &memory);
  const VkMemoryPropertyFlags mapped = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = memory.memoryTypes[i].propertyFlags;
    if (!(f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) continue;
    c.mapped_device_memory = (f & mapped) == mapped;
    break;
  }
  c.cooperative_matrix = c.vulkan_1_2 && c.int16_storage &&
                         support::enabled(support::Setting::vulkan_cooperative_matrix) &&
                         read_cooperative_matrix(instance, physical, c);
  emulate(c);
  if (!c.cooperative_matrix || !c.int16_storage || !c.float16) {
    c.cooperative_matrix = false;
    c.cooperative_m = c.cooperative_n = c.cooperative_k = 0;
  }

  info.missing.clear();
  info.fallbacks.clear();
  if (!c.vulkan_1_2) info.missing.push_back("Vulkan 1.2");
  if (!c.buffer_device_address && !c.descriptor_indexing) {
    info.missing.push_back(
        "bufferDeviceAddress, or shaderStorageBufferArrayDynamicIndexing to address buffers through descriptors");
  } else if (!c.buffer_device_address && c.max_storage_buffers < kMinDescriptorSlots) {
    info.missing.push_back("bufferDeviceAddress, or " + std::to_string(kMinDescriptorSlots) +
                           " storage-buffer descriptors per stage to address buffers through them");
  }
  if (c.max_workgroup_invocations < kInvocationsUsed) info.missing.push_back("64 invocations per workgroup");
  if (!c.buffer_device_address) {
    info.fallbacks.push_back(
        "no bufferDeviceAddress: buffers addressed as (descriptor, offset), one storage-buffer descriptor per memory "
        "block (" +
        std::to_string(descriptor_slots(c)) + " slots)");
  }
  if (!c.int64) info.fallbacks.push_back("no shaderInt64: buffer addresses as uvec2 (GL_EXT_buffer_reference_uvec2)");
  if (!c.int8_storage) info.fallbacks.push_back("no 8-bit storage: booleans read and written in 32-bit words");
  if (!c.int16_storage) info.fallbacks.push_back("no 16-bit storage: f16 and bf16 read and written in 32-bit words");
  if (!c.float64) info.fallbacks.push_back("no shaderFloat64: f64 programs are refused");
  if (!c.float16) info.fallbacks.push_back("no shaderFloat16: products allowed to sum in f16 sum in f32");
  if (!c.subgroup_arithmetic)
    info.fallbacks.push_back("no subgroup arithmetic: reductions combine in workgroup memory");
  if (!c.timestamps) info.fallbacks.push_back("no timestamps: kernels are not timed when profiling");
  info.usable = info.missing.empty();
  info.tier = !info.usable ? "unusable" : info.fallbacks.empty() ? "full" : "reduced";
}

}  // namespace fluxion::vulkan
