// The descriptor array of the memory blocks (block_descriptors.h).
#include "runtime/vulkan/block_descriptors.h"

#include <string>

#include "fluxion/error.h"
#include "runtime/vulkan/context.h"

namespace fluxion::vulkan {

BlockDescriptors::BlockDescriptors(VkDevice device, uint32_t slots, uint32_t max_range)
    : device_(device), slots_(slots), max_range_(max_range) {
  VkDescriptorSetLayoutBinding binding{0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, slots, VK_SHADER_STAGE_COMPUTE_BIT,
                                       nullptr};
  auto li = vk_struct<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  li.bindingCount = 1;
  li.pBindings = &binding;
  check(vkCreateDescriptorSetLayout(device_, &li, nullptr, &layout_), "vkCreateDescriptorSetLayout");
  // At most one set per added block: each is made by the first current() after a growth.
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, slots * slots};
  auto pi = vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
  pi.maxSets = slots;
  pi.poolSizeCount = 1;
  pi.pPoolSizes = &size;
  VkResult r = vkCreateDescriptorPool(device_, &pi, nullptr, &pool_);
  if (r != VK_SUCCESS) {
    vkDestroyDescriptorSetLayout(device_, layout_, nullptr);
    check(r, "vkCreateDescriptorPool");
  }
}

BlockDescriptors::~BlockDescriptors() {
  vkDestroyDescriptorPool(device_, pool_, nullptr);
  vkDestroyDescriptorSetLayout(device_, layout_, nullptr);
}

uint32_t BlockDescriptors::add(VkBuffer buffer, const char* pool) {
  std::lock_guard<std::mutex> lock(mu_);
  if (blocks_.size() >= slots_) {
    detail::fail("vulkan", std::string("out of descriptor slots: the ") + pool +
                               " pool needs another memory block, and all " + std::to_string(slots_) +
                               " storage-buffer descriptors that address memory on this device (it has no "
                               "bufferDeviceAddress) are taken by blocks");
  }
  blocks_.push_back(buffer);
  return static_cast<uint32_t>(blocks_.size() - 1);
}

VkDescriptorSet BlockDescriptors::current(uint64_t* generation) {
  std::lock_guard<std::mutex> lock(mu_);
  if (described_ != blocks_.size()) {
    if (blocks_.empty())
      detail::fail("vulkan", "internal error: a descriptor set was asked for before any memory block");
    auto ai = vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    ai.descriptorPool = pool_;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout_;
    VkDescriptorSet set = VK_NULL_HANDLE;
    check(vkAllocateDescriptorSets(device_, &ai, &set), "vkAllocateDescriptorSets");
    // Slots without a block yet describe the first block: every element a shader could index
    // must be a valid descriptor.
    std::vector<VkDescriptorBufferInfo> infos(slots_);
    for (uint32_t i = 0; i < slots_; ++i) infos[i] = {blocks_[i < blocks_.size() ? i : 0], 0, VK_WHOLE_SIZE};
    auto w = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
    w.dstSet = set;
    w.dstBinding = 0;
    w.descriptorCount = slots_;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = infos.data();
    vkUpdateDescriptorSets(device_, 1, &w, 0, nullptr);
    set_ = set;
    described_ = blocks_.size();
  }
  *generation = described_;
  return set_;
}

uint64_t BlockDescriptors::generation() const {
  std::lock_guard<std::mutex> lock(mu_);
  return blocks_.size();
}

}  // namespace fluxion::vulkan
