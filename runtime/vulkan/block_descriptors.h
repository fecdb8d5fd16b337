// Buffer addressing on a device without buffer device addresses (docs/vulkan.md,
// "Capabilities"): every memory block of every pool is one storage-buffer descriptor in a single
// array binding (set 0, binding 0), and an address is (slot << 32) | byte offset in the block,
// which shaders split into the array index and the offset (glsl_storage.cpp). A descriptor set
// must not change while a command buffer that bound it may still run, so the set is never
// updated: a block added after a set was made brings a new set describing every block so far
// (a generation), and a program re-records its command buffer when the generation it bound is
// no longer the current one. Old sets stay allocated (their command buffers may be pending);
// there is at most one per slot.
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace fluxion::vulkan {

class BlockDescriptors {
 public:
  // `slots`: descriptors in the array (the device's storage-buffer limits allow as many);
  // `max_range`: the device's maxStorageBufferRange, the largest block one descriptor covers.
  BlockDescriptors(VkDevice device, uint32_t slots, uint32_t max_range);
  ~BlockDescriptors();
  BlockDescriptors(const BlockDescriptors&) = delete;
  BlockDescriptors& operator=(const BlockDescriptors&) = delete;

  uint32_t slots() const { return slots_; }
  VkDeviceSize max_block_bytes() const { return max_range_; }
  VkDescriptorSetLayout layout() const { return layout_; }
  // The slot of a new block; raises Error naming the limit when every slot is taken. `pool`
  // names the memory pool in that message.
  uint32_t add(VkBuffer buffer, const char* pool);
  // The set describing every block added so far, and its generation.
  VkDescriptorSet current(uint64_t* generation);
  uint64_t generation() const;

 private:
  VkDevice device_;
  uint32_t slots_;
  VkDeviceSize max_range_;
  VkDescriptorSetLayout layout_ = VK_NULL_HANDLE;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  std::vector<VkBuffer> blocks_;
  VkDescriptorSet set_ = VK_NULL_HANDLE;  // describes blocks_[0 .. described_)
  size_t described_ = 0;
  mutable std::mutex mu_;
};

}  // namespace fluxion::vulkan
