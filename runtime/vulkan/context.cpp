// Device discovery, selection and the process-wide context (docs/vulkan.md).
#include "runtime/vulkan/context.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <vector>

#include "fluxion/error.h"
#include "runtime/disk_cache.h"
#include "runtime/vulkan/capabilities.h"
#include "runtime/vulkan/validation.h"
#include "support/settings.h"

namespace fluxion::vulkan {
namespace {

std::string result_name(VkResult r) {
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory (VK_ERROR_OUT_OF_HOST_MEMORY)";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "out of device memory (VK_ERROR_OUT_OF_DEVICE_MEMORY)";
    case VK_ERROR_DEVICE_LOST: return "the device was lost (VK_ERROR_DEVICE_LOST)";
    case VK_ERROR_INITIALIZATION_FAILED: return "initialization failed (VK_ERROR_INITIALIZATION_FAILED)";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "no compatible Vulkan driver (VK_ERROR_INCOMPATIBLE_DRIVER)";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "a required feature is missing (VK_ERROR_FEATURE_NOT_PRESENT)";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "a required extension is missing (VK_ERROR_EXTENSION_NOT_PRESENT)";
    case VK_TIMEOUT: return "timed out (VK_TIMEOUT)";
    default: return "VkResult " + std::to_string(static_cast<int>(r));
  }
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string vendor_name(uint32_t id) {
  switch (id) {
    case 0x10DE: return "nvidia";
    case 0x1002: return "amd";
    case 0x8086: return "intel";
    case 0x106B: return "apple";
    case 0x13B5: return "arm";
    case 0x5143: return "qualcomm";
    case 0x10005: return "mesa";
    default: {
      char buf[16];
      std::snprintf(buf, sizeof buf, "0x%x", id);
      return buf;
    }
  }
}

std::string type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

VkInstance create_instance() {
  auto app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "fluxion";
  app.pEngineName = "fluxion";
  app.apiVersion = VK_API_VERSION_1_2;
  auto ci = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  ci.pApplicationInfo = &app;
  return create_validated_instance(ci);
}

// The driver's name and version. Vendors pack driverVersion their own way: NVIDIA in 10.8.8.6
// bits; Mesa, AMD and ARM as Vulkan versions (as are Intel's Linux drivers, which are Mesa's).
void describe_driver(VkPhysicalDevice physical, const VkPhysicalDeviceProperties& p, VulkanDeviceInfo& info) {
  uint32_t v = p.driverVersion;
  auto dotted = [](std::initializer_list<uint32_t> parts) {
    std::string s;
    for (uint32_t x : parts) s += (s.empty() ? "" : ".") + std::to_string(x);
    return s;
  };
  if (p.vendorID == 0x10DE) {
    info.driver_version = dotted({v >> 22, (v >> 14) & 0xff, (v >> 6) & 0xff, v & 0x3f});
  } else {
    info.driver_version = dotted({VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v)});
  }
  if (p.apiVersion < VK_API_VERSION_1_2) return;
  auto dp = vk_struct<VkPhysicalDeviceDriverProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
  auto p2 = vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  p2.pNext = &dp;
  vkGetPhysicalDeviceProperties2(physical, &p2);
  info.driver = std::string(dp.driverName) + (dp.driverInfo[0] ? std::string(" ") + dp.driverInfo : "");
}

struct Candidate {
  VkPhysicalDevice physical;
  VulkanDeviceInfo info;
  VkPhysicalDeviceType type;
};

std::vector<Candidate> enumerate(VkInstance instance) {
  std::vector<Candidate> out;
  if (!instance) return out;
  uint32_t n = 0;
  if (vkEnumeratePhysicalDevices(instance, &n, nullptr) != VK_SUCCESS) return out;
  std::vector<VkPhysicalDevice> devs(n);
  vkEnumeratePhysicalDevices(instance, &n, devs.data());
  for (uint32_t i = 0; i < n; ++i) {
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(devs[i], &p);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(devs[i], &mp);
    VulkanDeviceInfo info;
    info.index = static_cast<int>(i);
    info.name = p.deviceName;
    info.vendor = vendor_name(p.vendorID);
    info.type = type_name(p.deviceType);
    for (uint32_t h = 0; h < mp.memoryHeapCount; ++h) {
      if (mp.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
        info.memory_bytes = std::max<uint64_t>(info.memory_bytes, mp.memoryHeaps[h].size);
    }
    info.api_version = std::to_string(VK_API_VERSION_MAJOR(p.apiVersion)) + "." +
                       std::to_string(VK_API_VERSION_MINOR(p.apiVersion)) + "." +
                       std::to_string(VK_API_VERSION_PATCH(p.apiVersion));
    describe_driver(devs[i], p, info);
    read_capabilities(instance, devs[i], info);
    out.push_back({devs[i], info, p.deviceType});
  }
  return out;
}

std::string pipeline_cache_key(const VkPhysicalDeviceProperties& p) {
  std::string key = "fluxion-vkpipelinecache-1\n" + std::string(p.deviceName) + "\n" + std::to_string(p.vendorID) +
                    ":" + std::to_string(p.deviceID) + ":" + std::to_string(p.driverVersion) + "\n";
  for (uint8_t b : p.pipelineCacheUUID) key += std::to_string(b) + ",";
  return key;
}

Context* opened = nullptr;

std::atomic<bool> device_closed{false};

// Never destroyed: objects destroyed after the exit handler still unregister their closers.
struct Closers {
  std::mutex mu;
  std::map<uint64_t, std::function<void()>> pending;  // by token, in registration order
  uint64_t next = 0;
};
Closers& closers() {
  static auto* c = new Closers;
  return *c;
}

// The pipeline cache's data to disk, for the next run.
void store_pipeline_cache() {
  if (!opened || !opened->pipeline_cache) return;
  size_t n = 0;
  if (vkGetPipelineCacheData(opened->device, opened->pipeline_cache, &n, nullptr) != VK_SUCCESS || n == 0) return;
  std::string data(n, '\0');
  if (vkGetPipelineCacheData(opened->device, opened->pipeline_cache, &n, data.data()) != VK_SUCCESS) return;
  data.resize(n);
  runtime::disk_cache_store(pipeline_cache_key(opened->properties), data);
}

void close_at_exit() {
  if (!opened || !opened->device) return;
  store_pipeline_cache();
  vkDeviceWaitIdle(opened->device);
  std::map<uint64_t, std::function<void()>> pending;
  {
    std::lock_guard<std::mutex> lock(closers().mu);
    pending.swap(closers().pending);
    device_closed = true;
  }
  for (auto it = pending.rbegin(); it != pending.rend(); ++it) it->second();
  opened->close();
}

// The device chosen before first use (select_vulkan_device), as an index or a name.
std::mutex choice_mu;
std::optional<int> chosen_index;
std::optional<std::string> chosen_name;

int rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
  }
}

std::string describe(const std::vector<Candidate>& cs) {
  std::string s;
  for (const Candidate& c : cs) {
    s += "\n  " + std::to_string(c.info.index) + ": " + c.info.name + " (" + c.info.type +
         (c.info.usable ? "" : ", not usable") + ")";
  }
  return s.empty() ? " none" : s;
}

const Candidate& pick(const std::vector<Candidate>& cs, const std::optional<int>& index,
                      const std::optional<std::string>& name) {
  std::string env = support::text(support::Setting::vulkan_device);
  std::optional<int> want_index = index;
  std::optional<std::string> want_name = name;
  std::string source = "select_vulkan_device";
  if (!want_index && !want_name && !env.empty()) {
    source = "FLUXION_VULKAN_DEVICE";
    char* end = nullptr;
    long v = std::strtol(env.c_str(), &end, 10);
    if (end && *end == '\0') want_index = static_cast<int>(v);
    else want_name = env;
  }
  auto usable_or_fail = [&](const Candidate& c) -> const Candidate& {
    if (!c.info.usable) {
      std::string missing;
      for (const std::string& m : c.info.missing) missing += (missing.empty() ? "" : ", ") + m;
      detail::fail("vulkan", source + " chose device " + std::to_string(c.info.index) + " (" + c.info.name +
                                 "), which lacks " + missing + "; devices:" + describe(cs));
    }
    return c;
  };
  if (want_index) {
    if (*want_index < 0 || *want_index >= static_cast<int>(cs.size())) {
      detail::fail("vulkan",
                   source + " asked for device index " + std::to_string(*want_index) + "; devices:" + describe(cs));
    }
    return usable_or_fail(cs[static_cast<size_t>(*want_index)]);
  }
  if (want_name) {
    for (const Candidate& c : cs) {
      if (lower(c.info.name).find(lower(*want_name)) != std::string::npos) return usable_or_fail(c);
    }
    detail::fail("vulkan", source + " asked for a device named '" + *want_name + "'; devices:" + describe(cs));
  }
  const Candidate* best = nullptr;
  for (const Candidate& c : cs) {
    if (c.info.usable && (!best || rank(c.type) < rank(best->type))) best = &c;
  }
  if (!best) {
    detail::fail("vulkan",
                 "no usable Vulkan device: the Vulkan backend needs a Vulkan 1.2 device (a GPU driver, or Mesa's "
                 "lavapipe from the package mesa-vulkan-drivers); devices:" +
                     describe(cs));
  }
  return *best;
}

Context* open_context() {
  auto ctx = std::make_unique<Context>();
  ctx->instance = create_instance();
  if (!ctx->instance) {
    detail::fail("vulkan",
                 "no Vulkan driver: vkCreateInstance failed (install a GPU driver, or Mesa's lavapipe from the "
                 "package mesa-vulkan-drivers)");
  }
  std::vector<Candidate> cs = enumerate(ctx->instance);
  const Candidate& c = pick(cs, chosen_index, chosen_name);
  ctx->physical = c.physical;
  ctx->info = c.info;
  vkGetPhysicalDeviceProperties(c.physical, &ctx->properties);
  ctx->timestamp_period_ns = ctx->properties.limits.timestampPeriod;
  const VulkanCapabilities& caps = c.info.capabilities;
  ctx->shaders.subgroup_arithmetic = caps.subgroup_arithmetic;
  ctx->shaders.int64 = caps.int64;
  ctx->shaders.descriptor_slots = caps.buffer_device_address ? 0 : descriptor_slots(caps);
  ctx->shaders.int8_storage = caps.int8_storage;
  ctx->shaders.int16_storage = caps.int16_storage;
  ctx->shaders.float64 = caps.float64;
  ctx->shaders.float16 = caps.float16;
  ctx->shaders.max_shared_bytes = caps.max_shared_memory_bytes;
  if (caps.cooperative_matrix) {
    ctx->shaders.cooperative_m = caps.cooperative_m;
    ctx->shaders.cooperative_n = caps.cooperative_n;
    ctx->shaders.cooperative_k = caps.cooperative_k;
  }
  auto fc =
      vk_struct<VkPhysicalDeviceFloatControlsProperties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES);
  auto p2f = vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  p2f.pNext = &fc;
  vkGetPhysicalDeviceProperties2(c.physical, &p2f);
  ctx->shaders.preserve_nan32 = fc.shaderSignedZeroInfNanPreserveFloat32;
  ctx->shaders.preserve_nan64 = fc.shaderSignedZeroInfNanPreserveFloat64;

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(c.physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qs(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(c.physical, &nq, qs.data());
  bool found = false;
  for (uint32_t i = 0; i < nq && !found; ++i) {
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      ctx->queue_family = i;
      ctx->timestamp_bits = caps.timestamps ? qs[i].timestampValidBits : 0;
      found = true;
    }
  }
  if (!found) detail::fail("vulkan", "device " + c.info.name + " has no compute queue");

  // Only what the capabilities keep: a disabled feature is not enabled either, so that the
  // validation layer reports a shader that still uses it.
  auto f12 = vk_struct<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  f12.bufferDeviceAddress = caps.buffer_device_address;
  f12.storageBuffer8BitAccess = caps.int8_storage;
  f12.shaderInt8 = caps.int8_storage;
  f12.shaderFloat16 = caps.float16;
  auto f11 = vk_struct<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  f11.storageBuffer16BitAccess = caps.int16_storage;
  f12.pNext = &f11;
  // Cooperative-matrix shaders are f16 arithmetic (kept only with float16) under the Vulkan
  // memory model.
  auto coop = vk_struct<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  std::vector<const char*> extensions;
  if (caps.cooperative_matrix) {
    coop.cooperativeMatrix = VK_TRUE;
    f12.vulkanMemoryModel = VK_TRUE;
    f11.pNext = &coop;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  auto want = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  want.pNext = &f12;
  want.features.shaderInt64 = caps.int64;
  want.features.shaderFloat64 = caps.float64;
  want.features.shaderStorageBufferArrayDynamicIndexing = !caps.buffer_device_address;
  float priority = 1;
  auto qi = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
  qi.queueFamilyIndex = ctx->queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  auto di = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  di.pNext = &want;
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  di.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  di.ppEnabledExtensionNames = extensions.data();
  check(vkCreateDevice(c.physical, &di, nullptr, &ctx->device), "vkCreateDevice");
  vkGetDeviceQueue(ctx->device, ctx->queue_family, 0, &ctx->queue);
  // The driver's compiled pipelines from earlier runs (the driver checks the data's UUID and
  // ignores data of another device or driver version).
  bool cached = false;
  std::string initial = runtime::disk_cache_load(pipeline_cache_key(ctx->properties), &cached);
  auto pci = vk_struct<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  pci.initialDataSize = cached ? initial.size() : 0;
  pci.pInitialData = cached ? initial.data() : nullptr;
  if (vkCreatePipelineCache(ctx->device, &pci, nullptr, &ctx->pipeline_cache) != VK_SUCCESS) {
    pci.initialDataSize = 0;
    pci.pInitialData = nullptr;
    check(vkCreatePipelineCache(ctx->device, &pci, nullptr, &ctx->pipeline_cache), "vkCreatePipelineCache");
  }
  std::atexit(close_at_exit);
  if (!caps.buffer_device_address) {
    ctx->descriptors =
        std::make_unique<BlockDescriptors>(ctx->device, ctx->shaders.descriptor_slots, caps.max_storage_buffer_range);
  }
  ctx->device_pool = std::make_unique<MemoryPool>(ctx->device, ctx->physical, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0,
                                                  caps.mapped_device_memory, "device", ctx->descriptors.get());
  ctx->staging_pool = std::make_unique<MemoryPool>(
      ctx->device, ctx->physical, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
      VK_MEMORY_PROPERTY_HOST_CACHED_BIT, true, "staging", ctx->descriptors.get());
  return ctx.release();
}

}  // namespace

void check(VkResult r, const char* what) {
  if (r != VK_SUCCESS) detail::fail("vulkan", std::string(what) + " failed: " + result_name(r));
}

void Context::close() {
  if (device) {
    vkDeviceWaitIdle(device);
    // The pools stay (buffers still hold ranges of them), their blocks destroyed; they make no
    // new block, so the descriptors they point to can go.
    if (device_pool) device_pool->close();
    if (staging_pool) staging_pool->close();
    descriptors.reset();
    if (transfer_fence) vkDestroyFence(device, transfer_fence, nullptr);
    if (transfer_pool) vkDestroyCommandPool(device, transfer_pool, nullptr);
    if (pipeline_cache) vkDestroyPipelineCache(device, pipeline_cache, nullptr);
    vkDestroyDevice(device, nullptr);
  }
  destroy_validated_instance(instance);
  transfer_fence = VK_NULL_HANDLE;
  transfer_pool = VK_NULL_HANDLE;
  pipeline_cache = VK_NULL_HANDLE;
  device = VK_NULL_HANDLE;
  instance = VK_NULL_HANDLE;
}

Context::~Context() { close(); }

Context& context() {
  check_open("the Vulkan backend");
  std::lock_guard<std::mutex> lock(choice_mu);
  if (!opened) opened = open_context();
  return *opened;
}

bool closed() { return device_closed; }

uint64_t add_closer(std::function<void()> close) {
  std::lock_guard<std::mutex> lock(closers().mu);
  uint64_t token = closers().next++;
  closers().pending.emplace(token, std::move(close));
  return token;
}

void remove_closer(uint64_t token) {
  std::lock_guard<std::mutex> lock(closers().mu);
  closers().pending.erase(token);
}

void check_open(const char* what) {
  if (device_closed)
    detail::fail("vulkan", std::string(what) + ": the Vulkan device was closed when the process exited");
}

bool available() {
  static const bool usable = [] {
    for (const VulkanDeviceInfo& d : vulkan_devices()) {
      if (d.usable) return true;
    }
    return false;
  }();
  return usable;
}

int64_t loop_iteration_limit(const Context& ctx) {
  return ctx.info.name.find("llvmpipe") != std::string::npos ? 60000 : 0;
}

}  // namespace fluxion::vulkan

namespace fluxion {

std::vector<VulkanDeviceInfo> vulkan_devices() {
  VkInstance instance = vulkan::create_instance();
  std::vector<VulkanDeviceInfo> out;
  for (const auto& c : vulkan::enumerate(instance)) out.push_back(c.info);
  vulkan::destroy_validated_instance(instance);
  return out;
}

static void choose(std::optional<int> index, std::optional<std::string> name) {
  std::lock_guard<std::mutex> lock(vulkan::choice_mu);
  if (vulkan::opened) {
    detail::fail("select_vulkan_device", "the Vulkan backend already runs on device " +
                                             std::to_string(vulkan::opened->info.index) + " (" +
                                             vulkan::opened->info.name + "); choose a device before its first use");
  }
  VkInstance instance = vulkan::create_instance();
  auto cs = vulkan::enumerate(instance);
  vulkan::destroy_validated_instance(instance);
  vulkan::pick(cs, index, name);  // validates the choice now, not at first use
  vulkan::chosen_index = index;
  vulkan::chosen_name = name;
}

void select_vulkan_device(int index) { choose(index, std::nullopt); }
void select_vulkan_device(const std::string& name) { choose(std::nullopt, name); }

VulkanDeviceInfo vulkan_device() { return vulkan::context().info; }

}  // namespace fluxion
