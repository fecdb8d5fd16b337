// A Vulkan program's compiled form in an artifact: taken from a running program for
// Compiled::save, and made into a running program again by fluxion::load.
#pragma once

#include <memory>
#include <string>

#include "runtime/artifact.h"
#include "runtime/executable.h"

namespace fluxion::vulkan {

// Fills a.vulkan from the program's current recording, layout and its device's shader target.
void export_recording(const Recording& recording, const VulkanLayout& layout, const ShaderTarget& target,
                      runtime::Artifact& a);

// Why the compiled form `code` cannot run on this process's Vulkan device ("" when it can).
std::string vulkan_incompatibility(const runtime::VulkanCode& code);

// The program of `code`: its pipelines made from its SPIR-V, its recording replayed by calls.
// `kernels` is its kernel listing (describe()).
std::unique_ptr<runtime::Executable> load_vulkan(const runtime::VulkanCode& code, std::string kernels);

}  // namespace fluxion::vulkan
