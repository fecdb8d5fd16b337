#include "runtime/load.h"

#include <dlfcn.h>
#include <sys/utsname.h>

#include <fstream>
#include <map>
#include <sstream>

#include "fluxion/error.h"
#include "runtime/compiled_impl.h"
#include "runtime/counters.h"
#include "runtime/cpu/elf_loader.h"
#include "runtime/cpu/features.h"
#include "runtime/cpu/helpers.h"
#include "runtime/cpu/program.h"
#include "runtime/vulkan/exported.h"

namespace fluxion::runtime {
namespace {

std::string machine() {
  utsname u{};
  return uname(&u) == 0 ? u.machine : "unknown";
}

std::string list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

// Where generated code's undefined symbols come from, as for the JIT: the runtime's helpers,
// then glibc's vector math library, then the process (libm, libc).
void* resolve(const std::string& name) {
  static const std::map<std::string, void*> helpers = [] {
    std::map<std::string, void*> m;
    for (const cpu::RuntimeSymbol& s : cpu::runtime_symbols()) m[s.name] = s.address;
    return m;
  }();
  if (auto it = helpers.find(name); it != helpers.end()) return it->second;
  static void* const libmvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (libmvec) {
    if (void* p = dlsym(libmvec, name.c_str())) return p;
  }
  return dlsym(RTLD_DEFAULT, name.c_str());
}

// A CPU program linked from an artifact's object code.
class LoadedCpuExecutable final : public Executable {
 public:
  LoadedCpuExecutable(const CpuCode& code, std::string kernels, const std::string& path)
      : code_(code), kernels_(std::move(kernels)), calls_(code.layout) {
    objects_ = cpu::link_objects(code_.objects, resolve, path);
    if (!objects_.empty()) entry_ = reinterpret_cast<cpu::EntryFn>(objects_.back()->symbol("fx_entry"));
    if (!entry_) detail::fail("load", path + ": its object code has no entry point fx_entry");
  }
  std::vector<Array> run(const std::vector<Array>& inputs) const override { return calls_.run(inputs, entry_); }
  void run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const override {
    calls_.run_into(inputs, outputs, entry_);
  }
  std::string describe() const override { return kernels_; }
  bool export_to(Artifact& a) const override {
    a.cpu = code_;
    return true;
  }

 private:
  CpuCode code_;
  std::string kernels_;
  cpu::CpuProgram calls_;
  std::vector<std::unique_ptr<cpu::LinkedObject>> objects_;
  cpu::EntryFn entry_ = nullptr;
};

struct LoadedImpl final : detail::CompiledImpl {
  const Executable& executable() const override { return *exec; }
  std::string ir() const override { return optimized_ir; }
  std::string traced_ir() const override { return traced; }

  std::unique_ptr<Executable> exec;
  std::string optimized_ir, traced;
};

}  // namespace

Artifact read_artifact(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) detail::fail("load", "cannot open " + path);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) detail::fail("load", "cannot read " + path);
  return decode_artifact(bytes.str(), path);
}

std::string incompatibility(const Artifact& a) {
  if (!a.compiled) {
    return std::string("it holds the IR of a program for the ") + backend_name(a.backend) +
           " backend and no compiled form";
  }
  if (a.backend == Backend::Vulkan) return vulkan::vulkan_incompatibility(a.vulkan);
  if (a.cpu.arch != machine()) return "it holds " + a.cpu.arch + " code and this machine is " + machine();
  if (a.cpu.helpers_abi != cpu::kHelpersAbi) {
    return "its code calls version " + std::to_string(a.cpu.helpers_abi) +
           " of the runtime's helpers, this library has version " + std::to_string(cpu::kHelpersAbi);
  }
  std::vector<std::string> missing = cpu::missing_cpu_features(a.cpu.required);
  if (!missing.empty()) {
    return "its code (generated for " + a.cpu.cpu + ") uses instructions this CPU lacks: " + list(missing);
  }
  return "";
}

Compiled loaded_program(Artifact a, const std::string& path) {
  runtime::counters().loads++;
  auto impl = std::make_shared<LoadedImpl>();
  impl->exec = a.backend == Backend::Vulkan ? vulkan::load_vulkan(a.vulkan, std::move(a.kernels))
                                            : std::make_unique<LoadedCpuExecutable>(a.cpu, std::move(a.kernels), path);
  impl->inputs = std::move(a.inputs);
  impl->outputs = std::move(a.outputs);
  impl->input_names = std::move(a.input_names);
  impl->output_names = std::move(a.output_names);
  impl->backend = a.backend;
  impl->hash = a.hash;
  impl->optimized_ir = std::move(a.ir);
  impl->traced = std::move(a.traced_ir);
  return Compiled(std::move(impl));
}

}  // namespace fluxion::runtime

namespace fluxion {

Compiled load(const std::string& path) {
  runtime::Artifact a = runtime::read_artifact(path);
  std::string why = runtime::incompatibility(a);
  if (!why.empty()) {
    detail::fail("load", path + ": its compiled form does not run here: " + why +
                             " (fluxion::load_or_compile re-compiles it from its IR with the full library)");
  }
  return runtime::loaded_program(std::move(a), path);
}

}  // namespace fluxion
