// The Vulkan backend's entry: a graph-IR program compiled to compute pipelines and one
// command buffer that runs it whole (docs/vulkan.md).
#pragma once

#include <memory>

#include "backends/backend.h"

namespace fluxion::vulkan {

// Fuses, plans, generates and compiles the shaders of `p` and records its command buffer.
// Raises Error when there is no usable Vulkan device, or the device lacks what `p` needs.
std::unique_ptr<backends::Executable> compile(const ir::Program& p);

}  // namespace fluxion::vulkan
