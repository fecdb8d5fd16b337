// Device memory sub-allocated from large blocks: a program's buffers never cost a
// vkAllocateMemory each. Every block is one VkBuffer with a device address; an allocation is a
// byte range of a block, addressed by shaders through buffer device addresses.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace fluxion::vulkan {

struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
  VkDeviceAddress address = 0;  // device address of the first byte
  std::byte* mapped = nullptr;  // host pointer of the first byte, for host-visible pools
  int block = -1;
  explicit operator bool() const { return buffer != VK_NULL_HANDLE; }
};

class MemoryPool {
 public:
  // `required`: memory property flags the pool's memory must have; `preferred`: flags chosen
  // when a memory type has them too.
  MemoryPool(VkDevice device, VkPhysicalDevice physical, VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred,
             const char* name);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // `bytes` rounded up to the pool's alignment; raises Error when the device is out of memory
  // or the FLUXION_VULKAN_MEMORY_LIMIT budget would be exceeded.
  Allocation allocate(VkDeviceSize bytes);
  void free(const Allocation& a);
  // Whether allocations are mapped (host-visible and coherent memory).
  bool host_visible() const { return host_visible_; }

 private:
  struct Block {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
    VkDeviceAddress address = 0;
    std::byte* mapped = nullptr;
    std::map<VkDeviceSize, VkDeviceSize> free;  // offset -> size, coalesced
  };
  int new_block(VkDeviceSize bytes);
  // The best memory type among `allowed` (a bit mask) with the pool's flags; sets host_visible_.
  uint32_t memory_type(uint32_t allowed);

  VkDevice device_;
  VkMemoryPropertyFlags required_, preferred_;
  VkPhysicalDeviceMemoryProperties props_{};
  uint32_t type_index_ = 0;
  bool host_visible_ = false;
  const char* name_;
  std::vector<Block> blocks_;
  VkDeviceSize in_use_ = 0;
  mutable std::mutex mu_;
};

// RAII holder of one allocation.
class Buffer {
 public:
  Buffer() = default;
  Buffer(MemoryPool& pool, VkDeviceSize bytes) : pool_(&pool), allocation_(pool.allocate(bytes)) {}
  ~Buffer() { reset(); }
  Buffer(Buffer&& o) noexcept : pool_(o.pool_), allocation_(o.allocation_) { o.allocation_ = {}; }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = o.pool_;
      allocation_ = o.allocation_;
      o.allocation_ = {};
    }
    return *this;
  }
  const Allocation& get() const { return allocation_; }
  const Allocation* operator->() const { return &allocation_; }
  void reset() {
    if (allocation_) pool_->free(allocation_);
    allocation_ = {};
  }

 private:
  MemoryPool* pool_ = nullptr;
  Allocation allocation_;
};

}  // namespace fluxion::vulkan
