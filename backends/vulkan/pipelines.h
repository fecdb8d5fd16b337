// Compute pipelines, one per distinct shader text, shared by every program in the process and
// built through the device's VkPipelineCache. All pipelines share one layout: 16 bytes of push
// constants (the io table's and the argument table's addresses) and, on a device without
// buffer device addresses, the memory blocks' descriptor set (block_descriptors.h).
#pragma once

#include <vulkan/vulkan.h>

#include <string>

namespace fluxion::vulkan {

struct Context;

VkPipelineLayout pipeline_layout(Context& ctx);
// The pipeline of `glsl` (compiled, validated and optimised on first request). `name` appears
// in error messages.
VkPipeline pipeline(Context& ctx, const std::string& glsl, const std::string& name);

}  // namespace fluxion::vulkan
