// The process-wide pipeline table (pipelines.h).
#include "runtime/vulkan/pipelines.h"

#include <map>
#include <mutex>
#include <vector>

#include "fluxion/error.h"
#include "runtime/vulkan/context.h"

namespace fluxion::vulkan {
namespace {

std::mutex mu;
VkPipelineLayout layout = VK_NULL_HANDLE;
std::map<std::string, VkPipeline>& table() {
  static auto* t = new std::map<std::string, VkPipeline>();  // lives as long as the context
  return *t;
}
std::map<VkPipeline, std::vector<uint32_t>>& sources() {
  static auto* t = new std::map<VkPipeline, std::vector<uint32_t>>();
  return *t;
}

VkPipelineLayout layout_locked(Context& ctx) {
  if (layout) return layout;
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 16};
  auto li = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  li.pushConstantRangeCount = 1;
  li.pPushConstantRanges = &range;
  VkDescriptorSetLayout blocks = ctx.descriptors ? ctx.descriptors->layout() : VK_NULL_HANDLE;
  if (blocks) {
    li.setLayoutCount = 1;
    li.pSetLayouts = &blocks;
  }
  check(vkCreatePipelineLayout(ctx.device, &li, nullptr, &layout), "vkCreatePipelineLayout");
  VkDevice device = ctx.device;
  add_closer([device] {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [key, p] : table()) vkDestroyPipeline(device, p, nullptr);
    table().clear();
    sources().clear();
    vkDestroyPipelineLayout(device, layout, nullptr);
    layout = VK_NULL_HANDLE;
  });
  return layout;
}

}  // namespace

VkPipelineLayout pipeline_layout(Context& ctx) {
  std::lock_guard<std::mutex> lock(mu);
  return layout_locked(ctx);
}

VkPipeline spirv_pipeline(Context& ctx, const std::string& key,
                          const std::function<std::vector<uint32_t>()>& spirv_of) {
  VkPipelineLayout shared_layout;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = table().find(key);
    if (it != table().end()) return it->second;
    shared_layout = layout_locked(ctx);
  }
  // Compiled outside the lock, so that threads compile different shaders side by side (the
  // pipeline cache is synchronised by the driver); a shader two threads compiled at once keeps
  // the first pipeline.
  std::vector<uint32_t> spirv = spirv_of();
  auto mi = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  mi.codeSize = spirv.size() * sizeof(uint32_t);
  mi.pCode = spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  check(vkCreateShaderModule(ctx.device, &mi, nullptr, &module), "vkCreateShaderModule");
  auto pi = vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  pi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pi.stage.module = module;
  pi.stage.pName = "main";
  pi.layout = shared_layout;
  VkPipeline p = VK_NULL_HANDLE;
  VkResult r = vkCreateComputePipelines(ctx.device, ctx.pipeline_cache, 1, &pi, nullptr, &p);
  vkDestroyShaderModule(ctx.device, module, nullptr);
  check(r, "vkCreateComputePipelines");
  std::lock_guard<std::mutex> lock(mu);
  auto [it, added] = table().emplace(key, p);
  if (!added) {
    vkDestroyPipeline(ctx.device, p, nullptr);
    return it->second;
  }
  sources()[p] = std::move(spirv);
  return p;
}

const std::vector<uint32_t>& pipeline_spirv(VkPipeline p) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = sources().find(p);
  if (it == sources().end()) detail::fail("vulkan", "internal error: a pipeline not made from SPIR-V");
  return it->second;
}

}  // namespace fluxion::vulkan
