// VulkanExecutable: a program fused, its shaders generated and compiled, and its run recorded
// (docs/vulkan.md); its calls run through VulkanProgram (runtime/vulkan/program.h).
#include "backends/vulkan/executable.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <new>
#include <optional>

#include "backends/vulkan/barrier_audit.h"
#include "backends/vulkan/pipelines.h"
#include "backends/vulkan/plan.h"
#include "backends/vulkan/recorder.h"
#include "fluxion/error.h"
#include "fluxion/profile.h"
#include "fluxion/runtime.h"
#include "fluxion/vulkan.h"
#include "runtime/artifact.h"
#include "runtime/counters.h"
#include "runtime/host_memory.h"
#include "runtime/profiler.h"
#include "runtime/vulkan/context.h"
#include "runtime/vulkan/device_array.h"
#include "runtime/vulkan/exported.h"
#include "runtime/vulkan/program.h"
#include "runtime/vulkan/validation.h"
#include "support/parallel_tasks.h"
#include "support/settings.h"

namespace fluxion::vulkan {
namespace {

// Shaders index arrays with 32-bit ints: every array must have fewer than 2^31 elements.
void check_sizes(const ir::Region& r) {
  for (const TensorType& t : r.types) {
    if (t.numel() >= (int64_t{1} << 31)) {
      detail::fail("vulkan", "array " + t.str() +
                                 " has 2^31 or more elements; the Vulkan backend indexes arrays with 32-bit integers");
    }
  }
  for (const ir::Node& n : r.nodes) {
    for (const ir::Region& sub : n.regions) check_sizes(sub);
  }
}

bool uses_dtype(const ir::Region& r, bool (*wanted)(DType)) {
  for (const TensorType& t : r.types) {
    if (wanted(t.dtype)) return true;
  }
  for (const ir::Node& n : r.nodes) {
    for (const ir::Region& sub : n.regions) {
      if (uses_dtype(sub, wanted)) return true;
    }
  }
  return false;
}

// FLUXION_DUMP_GLSL prints every kernel's shader source to stderr (without the prelude).
bool dump_glsl() { return support::enabled(support::Setting::dump_glsl); }

// The largest number of dispatches one recording may hold (unrolled loops included).
constexpr size_t kMaxDispatches = size_t{1} << 22;

class VulkanExecutable final : public backends::Executable {
 public:
  explicit VulkanExecutable(const ir::Program& p)
      : program_(p), ctx_(context()), target_(ctx_.shaders), tuning_(device_tuning(ctx_.info, target_)) {
    if (uses_dtype(program_.body, [](DType t) { return t == DType::f64; }) && !ctx_.shaders.float64) {
      detail::fail("vulkan", "device " + ctx_.info.name +
                                 " has no 64-bit float support (shaderFloat64); f64 programs cannot run on it");
    }
    target_.halves = uses_dtype(program_.body, is_half);
    check_sizes(program_.body);
    split_reductions(program_.body, tuning_);
    kernel::FusionOptions options = fusion_options(tuning_);
    options_.loop_kernels = support::enabled(support::Setting::vulkan_loop_kernels);
    options_.loop_iteration_limit = loop_iteration_limit(ctx_);
    // Under validation without buffer device addresses the audit stands in for synchronization
    // validation between dispatches (validation.cpp).
    options_.keep_accesses = barrier_audit_enabled() || (ctx_.descriptors && validation_requested());
    if (std::optional<int64_t> drop = support::whole_number(support::Setting::vulkan_drop_barrier))
      options_.drop_barrier = *drop;
    schedule_ = kernel::schedule(program_.body, true, options);
    plan_kernels(program_.body, schedule_, tuning_);
    // A program none of whose products runs on cooperative matrices does not need them where
    // it is loaded (an exported program records its target).
    bool cooperative = false;
    kernel::for_each_kernel(program_.body, schedule_,
                            [&](const ir::Region&, const kernel::RegionSchedule&, kernel::Kernel& k) {
                              cooperative = cooperative || k.plan.strategy == kernel::Strategy::CooperativeTiles;
                            });
    if (!cooperative) target_.cooperative_m = target_.cooperative_n = target_.cooperative_k = 0;
    VulkanLayout layout{program_.body.param_types(), program_.body.result_types(), schedule_.arena_bytes,
                        runtime::program_label(program_)};
    calls_ = std::make_unique<VulkanProgram>(ctx_, std::move(layout), first_recording(), [this](int loop) {
      int64_t& cap = options_.capacity[loop];
      if (cap == 0) cap = options_.default_capacity;
      cap *= 8;
      return record_program();
    });
    // A kernel without a pipeline of its own ran inside a loop's single-workgroup shader, by the
    // plan the loop shader gave it, which sums in f32: only the others' f16 sums need f16
    // arithmetic where the program is loaded. (The shaders recorded so far were compiled with
    // the device's own float16, which only declares the f16 types to a shader that uses none.)
    bool f16_sums = false;
    kernel::for_each_kernel(program_.body, schedule_,
                            [&](const ir::Region& r, const kernel::RegionSchedule&, kernel::Kernel& k) {
                              if (!kernels_.count(&k)) k.plan = in_loop_plan(r, k, tuning_);
                              f16_sums = f16_sums || k.plan.f16_sums;
                            });
    target_.float16 = f16_sums || cooperative;
  }

  std::vector<Array> run(const std::vector<Array>& inputs) const override { return calls_->run(inputs); }
  void run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const override {
    calls_->run_into(inputs, outputs);
  }
  std::string describe() const override { return kernel::print(program_.body, schedule_); }
  std::string kernel_containing(const std::vector<size_t>& path) const override {
    return kernel::kernel_containing(program_.body, schedule_, path);
  }
  runtime::CompileSummary compile_summary() const override {
    runtime::CompileSummary out;
    out.kernels = kernels_.size() + loops_.size();
    return out;
  }
  bool export_to(runtime::Artifact& a) const override {
    export_recording(calls_->recording(), calls_->layout(), target_, a);
    return true;
  }

 private:
  const CompiledKernel& kernel_pipeline(const ir::Region& r, const kernel::RegionSchedule& s, size_t ki) const {
    const kernel::Kernel* k = &s.kernels[ki];
    auto it = kernels_.find(k);
    if (it != kernels_.end()) return it->second;
    std::string name = "kernel " + std::to_string(kernels_.size()) + ":";
    for (size_t n : k->nodes) name += std::string(" ") + ir::op_name(r.nodes[n].op);
    CompiledKernel ck;
    ck.shader = emit_kernel(r, s, *k, name, target_);
    if (dump_glsl())
      std::fprintf(stderr, "// ---- %s\n%s\n", name.c_str(),
                   ck.shader.glsl.substr(shader_prelude(target_).size()).c_str());
    CompiledKernel& stored = kernels_[k] = std::move(ck);
    compile_or_defer(&stored.pipeline, stored.shader.glsl, name);
    if (!stored.shader.order_glsl.empty())
      compile_or_defer(&stored.order_pipeline, stored.shader.order_glsl, name + " order");
    return stored;
  }

  const CompiledLoop& loop_pipeline(const ir::Node& n, const std::vector<kernel::RegionSchedule>& subs) const {
    auto it = loops_.find(&n);
    if (it != loops_.end()) return it->second;
    std::string name =
        std::string("loop ") + std::to_string(loops_.size()) + ": " + ir::op_name(n.op) + " in one workgroup";
    CompiledLoop cl;
    cl.shader = emit_loop(n, subs, target_, tuning_, name);
    if (dump_glsl())
      std::fprintf(stderr, "// ---- %s\n%s\n", name.c_str(),
                   cl.shader.glsl.substr(shader_prelude(target_, true).size()).c_str());
    CompiledLoop& stored = loops_[&n] = std::move(cl);
    compile_or_defer(&stored.pipeline, stored.shader.glsl, name);
    return stored;
  }

  // Compiles `glsl` into *pipeline now, or, during the first recording, once that recording
  // has asked for all of its shaders (first_recording).
  void compile_or_defer(VkPipeline* pipeline, const std::string& glsl, const std::string& name) const {
    if (deferred_) {
      // A stand-in (never a driver's handle), so that the first recording takes the shape the
      // real one will.
      static char stand_in;
      *pipeline = reinterpret_cast<VkPipeline>(&stand_in);
      deferred_->push_back({pipeline, &glsl, name});
    } else {
      *pipeline = vulkan::pipeline(ctx_, glsl, name);
    }
  }

  // The program's first recording. A program's shaders are compiled side by side, on up to
  // fluxion::num_threads() threads: a recording that only collects them comes first (the shaders
  // a program needs are the ones its recording asks for, not every kernel's: a kernel inside a
  // loop shader has none), then their compiles, then the recording that uses them.
  Recording first_recording() const {
    std::vector<DeferredShader> shaders;
    deferred_ = &shaders;
    struct Stop {
      std::vector<DeferredShader>*& collecting;
      ~Stop() { collecting = nullptr; }
    } stop{deferred_};
    record_program();
    deferred_ = nullptr;
    support::for_each_in_parallel(shaders.size(), fluxion::num_threads(), [&](size_t i) {
      *shaders[i].pipeline = vulkan::pipeline(ctx_, *shaders[i].glsl, shaders[i].name);
    });
    return record_program();
  }

  // The program's dispatches with the loop capacities of options_, its shaders compiled.
  Recording record_program() const {
    std::vector<const ir::Node*> loops;
    Recording recording = record(
        program_, schedule_,
        [this](const ir::Region& r, const kernel::RegionSchedule& s, size_t k) -> const CompiledKernel& {
          return kernel_pipeline(r, s, k);
        },
        [this](const ir::Node& n, const std::vector<kernel::RegionSchedule>& subs) -> const CompiledLoop& {
          return loop_pipeline(n, subs);
        },
        options_, &loops);
    if (options_.keep_accesses) audit_barriers(recording);
    if (recording.dispatches.size() > kMaxDispatches) {
      detail::fail("vulkan", "the program unrolls to " + std::to_string(recording.dispatches.size()) +
                                 " dispatches (loops are recorded iteration by iteration), over the limit of " +
                                 std::to_string(kMaxDispatches));
    }
    return recording;
  }

  ir::Program program_;
  Context& ctx_;
  // The device's shader target, with `halves` set for a program that has f16 or bf16 values.
  ShaderTarget target_;
  DeviceTuning tuning_;
  kernel::RegionSchedule schedule_;
  mutable std::map<const kernel::Kernel*, CompiledKernel> kernels_;
  mutable std::map<const ir::Node*, CompiledLoop> loops_;
  struct DeferredShader {
    VkPipeline* pipeline;  // in kernels_ or loops_
    const std::string* glsl;
    std::string name;
  };
  // Where compile_or_defer collects shaders during the first recording; null otherwise.
  mutable std::vector<DeferredShader>* deferred_ = nullptr;
  mutable RecordOptions options_;
  std::unique_ptr<VulkanProgram> calls_;
};

}  // namespace

std::unique_ptr<backends::Executable> compile(const ir::Program& p) { return std::make_unique<VulkanExecutable>(p); }

}  // namespace fluxion::vulkan
