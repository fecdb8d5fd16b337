// The pipeline of a generated shader: its GLSL compiled to SPIR-V (shader.h) on first request,
// through the process-wide pipeline table (runtime/vulkan/pipelines.h).
#pragma once

#include <vulkan/vulkan.h>

#include <string>

#include "runtime/vulkan/pipelines.h"

namespace fluxion::vulkan {

// The pipeline of `glsl` (compiled, validated and optimised on first request). `name` appears
// in error messages.
VkPipeline pipeline(Context& ctx, const std::string& glsl, const std::string& name);

}  // namespace fluxion::vulkan
