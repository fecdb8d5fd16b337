#include "runtime/vulkan/exported.h"

#include <map>

#include "fluxion/error.h"
#include "runtime/vulkan/pipelines.h"

namespace fluxion::vulkan {
namespace {

class LoadedVulkanExecutable final : public runtime::Executable {
 public:
  LoadedVulkanExecutable(const runtime::VulkanCode& code, std::string kernels)
      : code_(code), kernels_(std::move(kernels)) {
    Context& ctx = context();
    std::vector<VkPipeline> pipelines;
    for (const std::vector<uint32_t>& words : code_.shaders) {
      std::string key(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(uint32_t));
      pipelines.push_back(spirv_pipeline(ctx, key, [&] { return words; }));
    }
    Recording r = code_.recording;
    for (size_t i = 0; i < r.dispatches.size(); ++i) r.dispatches[i].pipeline = pipelines.at(code_.dispatch_shaders[i]);
    calls_ = std::make_unique<VulkanProgram>(ctx, code_.layout, std::move(r), Regrow());
  }
  std::vector<Array> run(const std::vector<Array>& inputs) const override { return calls_->run(inputs); }
  void run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const override {
    calls_->run_into(inputs, outputs);
  }
  std::string describe() const override { return kernels_; }
  bool export_to(runtime::Artifact& a) const override {
    a.vulkan = code_;
    return true;
  }

 private:
  runtime::VulkanCode code_;
  std::string kernels_;
  std::unique_ptr<VulkanProgram> calls_;
};

}  // namespace

void export_recording(const Recording& recording, const VulkanLayout& layout, const ShaderTarget& target,
                      runtime::Artifact& a) {
  runtime::VulkanCode& v = a.vulkan;
  v.target = target;
  v.device = context().info.name;
  v.loop_iteration_limit = loop_iteration_limit(context());
  v.layout = layout;
  v.recording = recording;
  v.recording.accesses.clear();
  v.recording.costs.clear();
  std::map<VkPipeline, uint32_t> index;
  for (Dispatch& d : v.recording.dispatches) {
    auto [it, added] = index.emplace(d.pipeline, static_cast<uint32_t>(v.shaders.size()));
    if (added) v.shaders.push_back(pipeline_spirv(d.pipeline));
    v.dispatch_shaders.push_back(it->second);
    d.pipeline = VK_NULL_HANDLE;
  }
}

std::string vulkan_incompatibility(const runtime::VulkanCode& code) {
  if (!available()) return "it holds a Vulkan program and this machine has no usable Vulkan device";
  const ShaderTarget& have = context().shaders;
  const ShaderTarget& need = code.target;
  std::string missing;
  auto require = [&](bool ok, const char* what) {
    if (!ok) missing += (missing.empty() ? "" : ", ") + std::string(what);
  };
  // Each shader was generated for exactly one way of addressing memory and storing bytes.
  require(have.int64 || !need.int64, "64-bit integers in shaders");
  require(have.descriptor_slots == need.descriptor_slots,
          need.descriptor_slots == 0 ? "buffer device addresses"
                                     : "memory addressed through the same number of descriptors");
  require(have.int8_storage || !need.int8_storage, "8-bit storage");
  require(have.int16_storage || !(need.halves && need.int16_storage), "16-bit storage");
  require(have.float64 || !need.float64, "64-bit floats in shaders");
  require(have.float16 || !need.float16, "16-bit float arithmetic in shaders");
  require(have.preserve_nan32 || !need.preserve_nan32, "IEEE NaN and infinity in f32 shaders");
  require(have.preserve_nan64 || !need.preserve_nan64, "IEEE NaN and infinity in f64 shaders");
  require(have.subgroup_arithmetic || !need.subgroup_arithmetic, "subgroup arithmetic");
  require(have.max_shared_bytes >= need.max_shared_bytes, "as much workgroup memory");
  require(!need.cooperative() || (have.cooperative_m == need.cooperative_m &&
                                  have.cooperative_n == need.cooperative_n && have.cooperative_k == need.cooperative_k),
          "cooperative matrices of the same fragment shape");
  // A loop kernel recorded for a device without a cap on loop iterations would be cut short
  // (silently) on one with a lower cap.
  int64_t cap = loop_iteration_limit(context());
  require(cap == 0 || (code.loop_iteration_limit != 0 && code.loop_iteration_limit <= cap),
          "longer loops per invocation");
  if (missing.empty()) return "";
  return "it was compiled on " + code.device + " for shaders that need " + missing + ", which " + context().info.name +
         " does not offer";
}

std::unique_ptr<runtime::Executable> load_vulkan(const runtime::VulkanCode& code, std::string kernels) {
  return std::make_unique<LoadedVulkanExecutable>(code, std::move(kernels));
}

}  // namespace fluxion::vulkan
