// The kernels of a program that are compiled in LLVM modules of their own, apart from its entry
// point: each module is optimised and compiled on its own thread, and kernels whose code is the
// same (the identical blocks of a Transformer, a forward kernel the gradient runs again) are
// compiled once and called by one name.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace llvm {
class DataLayout;
class LLVMContext;
class Module;
}  // namespace llvm

namespace fluxion::cpu {

// What a kernel module defines before KernelModules::add names it: the kernel, a split
// kernel's combination of its parts and a product's shared packing (KernelEmitter::emit,
// emit_combine, emit_pack).
inline constexpr const char* kModuleKernel = "kernel";
inline constexpr const char* kModuleCombine = "combine";
inline constexpr const char* kModulePack = "pack";
inline constexpr std::array<const char*, 3> kModuleFunctions{kModuleKernel, kModuleCombine, kModulePack};

// A kernel whose work (kernel::kernel_work) is below this stays in the entry point's module,
// where LLVM may inline it: a loop's small per-step kernels (W7's scalar state) would otherwise
// pay a call, and compiling them separately saves nothing.
inline constexpr int64_t kOwnModuleMinWork = int64_t{1} << 12;

class KernelModules {
 public:
  struct Unique {
    std::unique_ptr<llvm::LLVMContext> context;
    std::unique_ptr<llvm::Module> module;
    std::string text;  // the module as LLVM prints it before its functions are renamed: its identity
    std::string name;  // the suffix of its exported functions' names
  };

  KernelModules(const llvm::DataLayout& layout, std::string triple);
  ~KernelModules();
  KernelModules(const KernelModules&) = delete;
  KernelModules& operator=(const KernelModules&) = delete;

  // A new, empty module (with its own context, so that modules compile on separate threads) for
  // one kernel; fill it, then add() it.
  std::pair<std::unique_ptr<llvm::LLVMContext>, std::unique_ptr<llvm::Module>> make() const;
  // Takes a filled module and returns the name suffix its functions are exported under:
  // module_symbol(defined, suffix) for each function it defines, the hash of its text. A module whose text
  // is that of one added before is dropped and gets that one's suffix.
  std::string add(std::unique_ptr<llvm::LLVMContext> context, std::unique_ptr<llvm::Module> module);

  std::vector<Unique>& modules() { return modules_; }

 private:
  std::string layout_;
  std::string triple_;
  std::vector<Unique> modules_;  // members destroyed in reverse: each module before its context
  std::map<std::string, size_t> by_name_;
};

// The exported name of function `defined` (kModuleKernel...) of the module named `suffix`.
std::string module_symbol(const char* defined, const std::string& suffix);

}  // namespace fluxion::cpu
