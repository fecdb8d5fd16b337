// The process-wide Vulkan state: instance, the chosen physical device, the logical device and
// its compute queue, the pipeline cache and the memory pools. Opened on first use; lives until
// the process exits.
#pragma once

#include <vulkan/vulkan.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "fluxion/vulkan.h"
#include "runtime/vulkan/block_descriptors.h"
#include "runtime/vulkan/memory.h"
#include "runtime/vulkan/shader_target.h"

namespace fluxion::vulkan {

// A Vulkan info struct, zeroed, with its sType set.
template <class T>
T vk_struct(VkStructureType type) {
  T s{};
  s.sType = type;
  return s;
}

// Raises Error naming `what` and the Vulkan result when `r` is not VK_SUCCESS. Out-of-memory
// and device-lost results say so in words.
void check(VkResult r, const char* what);

struct Context {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
  VulkanDeviceInfo info;
  VkPhysicalDeviceProperties properties{};
  ShaderTarget shaders;
  double timestamp_period_ns = 1;
  uint32_t timestamp_bits = 0;  // of the compute queue; 0: no timestamps (no profiling)
  std::mutex queue_mu;          // vkQueueSubmit needs the queue externally synchronised
  // One-time transfers outside programs (device_array.cpp), made on first use.
  std::mutex transfer_mu;
  VkCommandPool transfer_pool = VK_NULL_HANDLE;
  VkCommandBuffer transfer_cmd = VK_NULL_HANDLE;
  VkFence transfer_fence = VK_NULL_HANDLE;
  // The memory blocks' descriptors, on a device without buffer device addresses (else null).
  std::unique_ptr<BlockDescriptors> descriptors;
  std::unique_ptr<MemoryPool> device_pool;   // device-local: arenas, inputs, outputs, constants
  std::unique_ptr<MemoryPool> staging_pool;  // host-visible: uploads, readbacks, argument tables

  // Destroys what the context made, then the device and the instance (once).
  void close();
  ~Context();
};

// The context, opening it on first use. Raises Error when no usable device exists.
Context& context();

// The device's cap on loop iterations per shader invocation, with a margin; 0: none. llvmpipe
// (lavapipe's shader compiler) ends any invocation after 65535 loop iterations, loop entries
// included, counted over all its loops together.
int64_t loop_iteration_limit(const Context& ctx);

// Whether a usable Vulkan device exists (probed once, without opening it).
bool available();

// Closing at exit. NVIDIA's driver crashes the process at exit when its device is still open as
// the driver's libraries are torn down (a fault in one of the driver's own threads). So opening
// the device registers an exit handler, which runs before that teardown: it destroys every
// object made from the device (through the closers below), then the device and the instance. An
// object that outlives the handler (a program or an array kept in a static) finds closed() true
// and makes no Vulkan call; new work raises Error.
bool closed();
// Registers `close`, which destroys objects made from the device, to run in the exit handler
// (the newest first); remove_closer(token) unregisters it when they are destroyed before.
uint64_t add_closer(std::function<void()> close);
void remove_closer(uint64_t token);
// Raises Error naming `what` once the device is closed.
void check_open(const char* what);

}  // namespace fluxion::vulkan
