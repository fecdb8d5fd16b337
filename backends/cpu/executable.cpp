// A program compiled for the CPU: its schedule and its native code, run through CpuProgram.
#include "backends/cpu/executable.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>

#include "backends/cpu/codegen.h"
#include "backends/cpu/native.h"
#include "codegen_version.h"
#include "fluxion/error.h"
#include "fluxion/profile.h"
#include "kernel/cost.h"
#include "runtime/artifact.h"
#include "runtime/counters.h"
#include "runtime/cpu/features.h"
#include "runtime/cpu/helpers.h"
#include "runtime/cpu/program.h"
#include "runtime/host_memory.h"
#include "runtime/profiler.h"
#include "support/settings.h"

namespace fluxion::cpu {
namespace {

class CpuExecutable final : public backends::Executable {
 public:
  explicit CpuExecutable(const ir::Program& p) : program_(p) {
    kernel::FusionOptions options;
    schedule_ = kernel::schedule(program_.body, true, options);
    plan_kernels(program_.body, schedule_, host_target(false), options);
    code_ = build(false);
    if (support::enabled(support::Setting::dump_ir)) {
      std::fprintf(stderr, "// ---- kernels\n%s\n", describe().c_str());
    }
    calls_ = std::make_unique<CpuProgram>(layout());
  }

  std::vector<Array> run(const std::vector<Array>& inputs) const override {
    if (!profiling()) return calls_->run(inputs, code_->entry);
    const NativeCode& code = profiled_code();
    profile_marks().clear();
    std::vector<Array> out = calls_->run(inputs, code.entry);
    report_marks();
    return out;
  }

  void run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const override {
    if (!profiling()) return calls_->run_into(inputs, outputs, code_->entry);
    const NativeCode& code = profiled_code();
    profile_marks().clear();
    calls_->run_into(inputs, outputs, code.entry);
    report_marks();
  }

  std::string describe() const override { return kernel::print(program_.body, schedule_); }
  runtime::CompileSummary compile_summary() const override {
    runtime::CompileSummary out;
    out.kernels = kernel::kernel_lines(program_.body, schedule_).size();
    // The entry point's module and the kernel modules not found in the disk cache.
    if (!code_->from_disk_cache) out.compiled = 1 + code_->modules - code_->modules_from_disk_cache;
    out.threads = std::max(1, code_->threads);
    return out;
  }
  std::string kernel_containing(const std::vector<size_t>& path) const override {
    return kernel::kernel_containing(program_.body, schedule_, path);
  }

  bool export_to(runtime::Artifact& a) const override {
    a.cpu.objects = code_->objects;
    a.cpu.cpu = host().cpu;
    a.cpu.llvm_features = host().features;
    a.cpu.required = cpu::required_cpu_features(host().features);
    a.cpu.helpers_abi = kHelpersAbi;
    a.cpu.layout = calls_->layout();
    return true;
  }

 private:
  CpuLayout layout() const {
    CpuLayout l;
    for (ir::ValueId v : program_.body.results) {
      l.outputs.push_back(program_.body.type(v));
      size_t vi = static_cast<size_t>(v);
      size_t k = l.output_slots.size();
      bool in_place =
          schedule_.storage[vi] == kernel::Storage::Output && schedule_.output_index[vi] == static_cast<int32_t>(k);
      l.output_slots.push_back(in_place ? schedule_.offset[vi] : -1);
    }
    l.arena_bytes = schedule_.arena_bytes;
    l.label = runtime::program_label(program_);
    return l;
  }

  // Native code for the program; `profile`: with a timestamp before and after every kernel
  // (a separate compile, made on the first call that finds profiling on).
  static Target host_target(bool profile) {
    Target target;
    target.vector_bytes = host().vector_bytes;
    target.matmul_vector_bytes = host().matmul_vector_bytes;
    target.vector_registers = host().vector_registers;
    if (host().l1d_bytes > 0) target.l1d_bytes = host().l1d_bytes;
    target.bf16_products = host().bf16_products;
    target.profile = profile;
    return target;
  }

  std::unique_ptr<NativeCode> build(bool profile) const {
    Target target = host_target(profile);
    std::string key = std::string("fluxion codegen " FLUXION_CODEGEN_HASH) + "\nvector " +
                      std::to_string(target.vector_bytes) + " " + std::to_string(target.matmul_vector_bytes) +
                      " registers " + std::to_string(target.vector_registers) + (profile ? " profiled" : "") + "\n" +
                      support::cache_key_settings() + ir::print(program_) +
                      // The plans (plan rules may change them): the code renders them.
                      kernel::print(program_.body, schedule_);
    auto code = build_native(
        key, [&](llvm::Module& m, KernelModules& kernels) { emit_program(program_, schedule_, target, m, kernels); });
    (code->from_disk_cache ? runtime::counters().disk_cache_hits : runtime::counters().compiles)++;
    return code;
  }

  const NativeCode& profiled_code() const {
    std::call_once(profiled_once_, [&] {
      kernel_names_ = kernel::kernel_lines(program_.body, schedule_);
      kernel_costs_ = kernel::kernel_costs(program_.body, schedule_);
      profiled_code_ = build(true);
    });
    return *profiled_code_;
  }

  // Pairs this thread's marks of the call just made (before, after) into timed kernels.
  void report_marks() const {
    const std::vector<ProfileMark>& marks = profile_marks();
    if (marks.empty()) return;
    thread_local std::vector<runtime::TimedDispatch> dispatches;
    dispatches.clear();
    int64_t t0 = marks[0].ns;
    for (size_t i = 0; i + 1 < marks.size(); i += 2) {
      auto kernel = static_cast<size_t>(marks[i].kernel);
      const kernel::KernelCost& cost = kernel_costs_.at(kernel);
      dispatches.push_back({&kernel_names_.at(kernel), static_cast<double>(marks[i].ns - t0) / 1e3,
                            static_cast<double>(marks[i + 1].ns - marks[i].ns) / 1e3, cost.bytes, cost.flops});
    }
    runtime::report_profile(dispatches);
  }

  ir::Program program_;
  kernel::RegionSchedule schedule_;
  std::unique_ptr<NativeCode> code_;
  std::unique_ptr<CpuProgram> calls_;
  mutable std::once_flag profiled_once_;
  mutable std::unique_ptr<NativeCode> profiled_code_;
  mutable std::vector<std::string> kernel_names_;  // by fx_profile_mark's kernel number
  mutable std::vector<kernel::KernelCost> kernel_costs_;  // likewise
};

}  // namespace

std::unique_ptr<backends::Executable> compile(const ir::Program& p) { return std::make_unique<CpuExecutable>(p); }

}  // namespace fluxion::cpu
