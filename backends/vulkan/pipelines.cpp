#include "backends/vulkan/pipelines.h"

#include "backends/vulkan/shader.h"

namespace fluxion::vulkan {

VkPipeline pipeline(Context& ctx, const std::string& glsl, const std::string& name) {
  return spirv_pipeline(ctx, glsl, [&] { return compile_glsl_cached(glsl, name); });
}

}  // namespace fluxion::vulkan
