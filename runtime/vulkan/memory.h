// Device memory sub-allocated from large blocks: a program's buffers never cost a
// vkAllocateMemory each. Every block is one VkBuffer; an allocation is a byte range of a block,
// addressed by shaders through its buffer device address, or on a device without them through
// the block's descriptor slot and the offset (block_descriptors.h). Freed ranges are
// kept by size and handed out again (as PyTorch's caching allocator does), so a training step
// whose results replace the previous step's reuses their buffers; the kept ranges go back to
// the blocks before the pool grows.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace fluxion::vulkan {

struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
  VkDeviceAddress address = 0;  // address of the first byte, as shaders take it
  std::byte* mapped = nullptr;  // host pointer of the first byte, for host-visible pools
  int block = -1;
  explicit operator bool() const { return buffer != VK_NULL_HANDLE; }
};

class BlockDescriptors;

// While one lives, out-of-memory errors raised on this thread name the program `label` (a
// VulkanProgram's, as runtime::program_label makes it) as the one whose buffers were wanted.
class AllocatingFor {
 public:
  explicit AllocatingFor(const std::string& label);
  ~AllocatingFor();
  AllocatingFor(const AllocatingFor&) = delete;
  AllocatingFor& operator=(const AllocatingFor&) = delete;

 private:
  const std::string* outer_;
};

class MemoryPool {
 public:
  // `required`: memory property flags the pool's memory must have; `preferred`: flags chosen
  // when a memory type has them too; `map`: whether to map memory that is host-visible and
  // coherent (false: the pool is reached through staging copies whatever its memory);
  // `descriptors`: where blocks get their slots on a device without buffer device addresses
  // (null: blocks have device addresses).
  MemoryPool(VkDevice device, VkPhysicalDevice physical, VkMemoryPropertyFlags required,
             VkMemoryPropertyFlags preferred, bool map, const char* name, BlockDescriptors* descriptors);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // `bytes` rounded up to the pool's alignment; raises Error when the device is out of memory
  // or the FLUXION_VULKAN_MEMORY_LIMIT budget would be exceeded. A range carved from a block
  // (not a kept one reused) counts in counters().device_allocations.
  Allocation allocate(VkDeviceSize bytes);
  void free(const Allocation& a);
  // Destroys the blocks (context.h: closing at exit); ranges freed later are only counted, and
  // allocating raises Error.
  void close();
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
  // A range from a block's free list, or an empty Allocation.
  Allocation carve(int block, VkDeviceSize bytes);
  // `a` back into its block's free list, coalesced with its neighbours.
  void release(const Allocation& a);
  void release_kept();
  // The best memory type among `allowed` (a bit mask) with the pool's flags; sets host_visible_.
  uint32_t memory_type(uint32_t allowed);

  VkDevice device_;
  BlockDescriptors* descriptors_;
  VkMemoryPropertyFlags required_, preferred_;
  bool map_;
  VkPhysicalDeviceMemoryProperties props_{};
  uint32_t type_index_ = 0;
  bool host_visible_ = false;
  const char* name_;
  std::vector<Block> blocks_;
  bool closed_ = false;
  VkDeviceSize in_use_ = 0;
  std::map<VkDeviceSize, std::vector<Allocation>> kept_;  // freed ranges by size
  VkDeviceSize kept_bytes_ = 0;
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
