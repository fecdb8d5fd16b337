// Block sub-allocation: a kept range of the exact size first; else first fit over a coalesced
// free list per block; else, with the kept ranges returned to their blocks, first fit again;
// else a new block (64 MiB, or the request's size when larger).
#include "runtime/vulkan/memory.h"

#include <algorithm>
#include <optional>
#include <string>

#include "fluxion/error.h"
#include "runtime/counters.h"
#include "runtime/vulkan/block_descriptors.h"
#include "runtime/vulkan/context.h"
#include "support/round_up.h"
#include "support/settings.h"

namespace fluxion::vulkan {
namespace {

constexpr VkDeviceSize kBlockBytes = VkDeviceSize{64} << 20;
// Covers every device's minStorageBufferOffsetAlignment and keeps arrays on cache lines.
constexpr VkDeviceSize kAlignment = 256;

// FLUXION_VULKAN_MEMORY_LIMIT: bytes a pool may hold in use (to test out-of-memory handling).
VkDeviceSize memory_limit() {
  std::optional<int64_t> limit = support::whole_number(support::Setting::vulkan_memory_limit);
  return limit ? static_cast<VkDeviceSize>(*limit) : ~VkDeviceSize{0};
}

thread_local const std::string* allocating_for = nullptr;

// "out of device memory" and, inside an AllocatingFor, the program it names.
std::string out_of_memory() {
  std::string s = "out of device memory";
  if (allocating_for) s += " for " + *allocating_for;
  return s;
}

}  // namespace

AllocatingFor::AllocatingFor(const std::string& label) : outer_(allocating_for) { allocating_for = &label; }
AllocatingFor::~AllocatingFor() { allocating_for = outer_; }

MemoryPool::MemoryPool(VkDevice device, VkPhysicalDevice physical, VkMemoryPropertyFlags required,
                       VkMemoryPropertyFlags preferred, bool map, const char* name, BlockDescriptors* descriptors)
    : device_(device), descriptors_(descriptors), required_(required), preferred_(preferred), map_(map), name_(name) {
  vkGetPhysicalDeviceMemoryProperties(physical, &props_);
  type_index_ = memory_type(~0u);
}

uint32_t MemoryPool::memory_type(uint32_t allowed) {
  int best = -1;
  for (uint32_t i = 0; i < props_.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = props_.memoryTypes[i].propertyFlags;
    if (!(allowed & (1u << i)) || (f & required_) != required_) continue;
    if (best < 0 ||
        ((f & preferred_) == preferred_ && (props_.memoryTypes[best].propertyFlags & preferred_) != preferred_)) {
      best = static_cast<int>(i);
    }
  }
  if (best < 0) detail::fail("vulkan", std::string("the device has no memory type for the ") + name_ + " pool");
  // Mapped access needs coherent memory (nothing flushes or invalidates); otherwise the pool is
  // reached through staging copies.
  VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  host_visible_ = map_ && (props_.memoryTypes[best].propertyFlags & mappable) == mappable;
  return static_cast<uint32_t>(best);
}

MemoryPool::~MemoryPool() { close(); }

void MemoryPool::close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  for (Block& b : blocks_) {
    vkDestroyBuffer(device_, b.buffer, nullptr);
    vkFreeMemory(device_, b.memory, nullptr);
  }
  closed_ = true;
}

int MemoryPool::new_block(VkDeviceSize bytes) {
  Block b;
  b.size = std::max(kBlockBytes, bytes);
  if (descriptors_) {
    // One descriptor covers a block; the offset half of an address is 32 bits.
    VkDeviceSize most = descriptors_->max_block_bytes();
    if (bytes > most) {
      detail::fail("vulkan", "a buffer of " + std::to_string(bytes) +
                                 " bytes is larger than one storage-buffer descriptor covers on this device "
                                 "(maxStorageBufferRange = " +
                                 std::to_string(most) + "; it has no bufferDeviceAddress)");
    }
    b.size = std::min(b.size, most);
  }
  auto bi = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bi.size = b.size;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
             (descriptors_ ? 0 : VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT);
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vkCreateBuffer(device_, &bi, nullptr, &b.buffer), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, b.buffer, &req);
  if (!(req.memoryTypeBits & (1u << type_index_))) {
    bool was_visible = host_visible_;
    type_index_ = memory_type(req.memoryTypeBits);
    if (was_visible != host_visible_)
      detail::fail("vulkan", std::string("the ") + name_ + " pool's buffers need a memory type of another kind");
  }
  auto flags = vk_struct<VkMemoryAllocateFlagsInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO);
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  auto ai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
  ai.pNext = descriptors_ ? nullptr : &flags;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type_index_;
  VkResult r = vkAllocateMemory(device_, &ai, nullptr, &b.memory);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(device_, b.buffer, nullptr);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
      detail::fail(
          "vulkan",
          out_of_memory() + ": a block of " + std::to_string(req.size) + " bytes for the " + name_ +
              " pool, which holds " + std::to_string(in_use_) + " bytes in use, could not be allocated (" +
              (r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? "VK_ERROR_OUT_OF_DEVICE_MEMORY" : "VK_ERROR_OUT_OF_HOST_MEMORY") +
              ")");
    }
    check(r, "vkAllocateMemory");
  }
  check(vkBindBufferMemory(device_, b.buffer, b.memory, 0), "vkBindBufferMemory");
  if (host_visible_) {
    void* p = nullptr;
    check(vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
    b.mapped = static_cast<std::byte*>(p);
  }
  if (descriptors_) {
    try {
      b.address = VkDeviceAddress{descriptors_->add(b.buffer, name_)} << 32;
    } catch (...) {
      vkDestroyBuffer(device_, b.buffer, nullptr);
      vkFreeMemory(device_, b.memory, nullptr);
      throw;
    }
  } else {
    auto di = vk_struct<VkBufferDeviceAddressInfo>(VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO);
    di.buffer = b.buffer;
    b.address = vkGetBufferDeviceAddress(device_, &di);
  }
  b.free[0] = b.size;
  blocks_.push_back(std::move(b));
  return static_cast<int>(blocks_.size() - 1);
}

Allocation MemoryPool::allocate(VkDeviceSize bytes) {
  bytes = support::round_up(std::max<VkDeviceSize>(bytes, 1), kAlignment);
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_)
    detail::fail("vulkan", std::string("the ") + name_ + " pool's device was closed when the process exited");
  if (in_use_ + bytes > memory_limit()) {
    detail::fail("vulkan", out_of_memory() + ": the " + name_ + " pool would hold " + std::to_string(in_use_ + bytes) +
                               " bytes, over the budget FLUXION_VULKAN_MEMORY_LIMIT=" + std::to_string(memory_limit()));
  }
  // An emptied size stays in kept_ with its vector's capacity: a steady state that frees and
  // takes the same sizes call after call then makes no host allocation here either.
  if (auto it = kept_.find(bytes); it != kept_.end() && !it->second.empty()) {
    Allocation a = it->second.back();
    it->second.pop_back();
    kept_bytes_ -= bytes;
    in_use_ += bytes;
    return a;
  }
  auto from_blocks = [&]() -> Allocation {
    for (size_t i = 0; i < blocks_.size(); ++i) {
      if (Allocation a = carve(static_cast<int>(i), bytes)) return a;
    }
    return {};
  };
  Allocation a = from_blocks();
  if (!a && kept_bytes_ > 0) {
    release_kept();
    a = from_blocks();
  }
  if (!a) a = carve(new_block(bytes), bytes);
  in_use_ += bytes;
  runtime::counters().device_allocations++;
  return a;
}

Allocation MemoryPool::carve(int block, VkDeviceSize bytes) {
  Block& b = blocks_[static_cast<size_t>(block)];
  for (auto it = b.free.begin(); it != b.free.end(); ++it) {
    if (it->second < bytes) continue;
    VkDeviceSize off = it->first, size = it->second;
    b.free.erase(it);
    if (size > bytes) b.free[off + bytes] = size - bytes;
    return Allocation{b.buffer, off, bytes, b.address + off, b.mapped ? b.mapped + off : nullptr, block};
  }
  return {};
}

void MemoryPool::free(const Allocation& a) {
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ -= a.size;
  kept_[a.size].push_back(a);
  kept_bytes_ += a.size;
}

void MemoryPool::release_kept() {
  for (auto& [size, ranges] : kept_) {
    for (const Allocation& a : ranges) release(a);
    ranges.clear();
  }
  kept_bytes_ = 0;
}

void MemoryPool::release(const Allocation& a) {
  Block& b = blocks_[static_cast<size_t>(a.block)];
  auto it = b.free.emplace(a.offset, a.size).first;
  auto next = std::next(it);
  if (next != b.free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    b.free.erase(next);
  }
  if (it != b.free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      b.free.erase(it);
    }
  }
}

}  // namespace fluxion::vulkan
