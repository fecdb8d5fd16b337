// Host <-> device copies outside a program's command buffer (device_array.h).
#include "runtime/vulkan/device_array.h"

#include <cstring>

#include "runtime/counters.h"

namespace fluxion::vulkan {
namespace {

// Records the copy of `region` into a one-time command buffer, submits it and waits.
void one_shot(Context& ctx, const VkBufferCopy& region, VkBuffer src, VkBuffer dst) {
  std::lock_guard<std::mutex> lock(ctx.transfer_mu);
  if (!ctx.transfer_pool) {
    auto pi = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = ctx.queue_family;
    check(vkCreateCommandPool(ctx.device, &pi, nullptr, &ctx.transfer_pool), "vkCreateCommandPool");
    auto ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    ai.commandPool = ctx.transfer_pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    check(vkAllocateCommandBuffers(ctx.device, &ai, &ctx.transfer_cmd), "vkAllocateCommandBuffers");
    auto fi = vk_struct<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
    check(vkCreateFence(ctx.device, &fi, nullptr, &ctx.transfer_fence), "vkCreateFence");
  }
  auto bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(ctx.transfer_cmd, &bi), "vkBeginCommandBuffer");
  // Earlier submissions' writes visible to the copy; the copy's visible to the host.
  auto before = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  before.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT;
  before.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(ctx.transfer_cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1,
                       &before, 0, nullptr, 0, nullptr);
  vkCmdCopyBuffer(ctx.transfer_cmd, src, dst, 1, &region);
  auto after = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  after.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  after.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT;
  vkCmdPipelineBarrier(ctx.transfer_cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &after, 0, nullptr, 0,
                       nullptr);
  check(vkEndCommandBuffer(ctx.transfer_cmd), "vkEndCommandBuffer");
  auto si = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
  si.commandBufferCount = 1;
  si.pCommandBuffers = &ctx.transfer_cmd;
  {
    std::lock_guard<std::mutex> q(ctx.queue_mu);
    check(vkQueueSubmit(ctx.queue, 1, &si, ctx.transfer_fence), "vkQueueSubmit");
  }
  VkResult r = vkWaitForFences(ctx.device, 1, &ctx.transfer_fence, VK_TRUE, UINT64_MAX);
  vkResetFences(ctx.device, 1, &ctx.transfer_fence);
  check(r, "vkWaitForFences");
  runtime::counters().submissions++;
  runtime::counters().fence_waits++;
}

}  // namespace

void download(Context& ctx, const Allocation& src, void* dst, size_t n) {
  check_open("a read of a device array");  // its memory, mapped or not, is gone
  if (n == 0) return;
  if (src.mapped) {
    std::memcpy(dst, src.mapped, n);
    return;
  }
  Buffer staging(*ctx.staging_pool, n);
  one_shot(ctx, VkBufferCopy{src.offset, staging->offset, n}, src.buffer, staging->buffer);
  std::memcpy(dst, staging->mapped, n);
}

void upload(Context& ctx, const Allocation& dst, const void* src, size_t n) {
  check_open("a write of a device array");
  if (n == 0) return;
  if (dst.mapped) {
    std::memcpy(dst.mapped, src, n);
    return;
  }
  Buffer staging(*ctx.staging_pool, n);
  std::memcpy(staging->mapped, src, n);
  one_shot(ctx, VkBufferCopy{staging->offset, dst.offset, n}, staging->buffer, dst.buffer);
}

void VulkanBuffer::read(void* dst, size_t bytes) const { download(ctx_, buffer_.get(), dst, bytes); }

}  // namespace fluxion::vulkan
