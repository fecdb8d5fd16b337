// Compute pipelines, one per distinct shader, shared by every program in the process and
// built through the device's VkPipelineCache. All pipelines share one layout: 16 bytes of push
// constants (the io table's and the argument table's addresses) and, on a device without
// buffer device addresses, the memory blocks' descriptor set (block_descriptors.h).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fluxion::vulkan {

struct Context;

VkPipelineLayout pipeline_layout(Context& ctx);
// The pipeline of the shader named `key` (its source text, or its SPIR-V's bytes), made from the
// SPIR-V that `spirv` returns on first request.
VkPipeline spirv_pipeline(Context& ctx, const std::string& key, const std::function<std::vector<uint32_t>()>& spirv);
// The SPIR-V that pipeline `p` (made by spirv_pipeline) was made from.
const std::vector<uint32_t>& pipeline_spirv(VkPipeline p);

}  // namespace fluxion::vulkan
