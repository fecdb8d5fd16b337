// Array bytes in device memory (fluxion::detail::DeviceBuffer for the Vulkan backend): the
// results of a program, which the next program reads in place; read back to the host only
// when the user reads them.
#pragma once

#include "fluxion/array.h"
#include "runtime/vulkan/context.h"

namespace fluxion::vulkan {

class VulkanBuffer final : public detail::DeviceBuffer {
 public:
  VulkanBuffer(Context& ctx, VkDeviceSize bytes) : ctx_(ctx), buffer_(*ctx.device_pool, bytes) {}
  void read(void* dst, size_t bytes) const override;
  const Allocation& allocation() const { return buffer_.get(); }

 private:
  Context& ctx_;
  Buffer buffer_;
};

// Copies `n` bytes between host memory and a device allocation: directly when it is mapped,
// else through a staging buffer and a one-time command buffer.
void download(Context& ctx, const Allocation& src, void* dst, size_t n);
void upload(Context& ctx, const Allocation& dst, const void* src, size_t n);

}  // namespace fluxion::vulkan
