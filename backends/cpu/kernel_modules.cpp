#include "backends/cpu/kernel_modules.h"

#include <llvm/IR/DataLayout.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>

#include "fluxion/error.h"

namespace fluxion::cpu {
namespace {

std::string hex_hash(const std::string& text) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace

KernelModules::KernelModules(const llvm::DataLayout& layout, std::string triple)
    : layout_(layout.getStringRepresentation()), triple_(std::move(triple)) {}

KernelModules::~KernelModules() {
  // Each module before the context it lives in.
  for (Unique& u : modules_) u.module.reset();
}

std::pair<std::unique_ptr<llvm::LLVMContext>, std::unique_ptr<llvm::Module>> KernelModules::make() const {
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("kernel", *context);
  module->setDataLayout(layout_);
  module->setTargetTriple(triple_);
  return {std::move(context), std::move(module)};
}

std::string KernelModules::add(std::unique_ptr<llvm::LLVMContext> context, std::unique_ptr<llvm::Module> module) {
  ++added_;
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, nullptr);
  os.flush();
  auto seen = by_text_.find(text);
  if (seen != by_text_.end()) {
    module.reset();
    return modules_[seen->second].name;
  }
  // Distinct texts with the same hash (never seen, but possible) get distinct names.
  std::string name = hex_hash(text);
  for (const Unique& u : modules_) {
    if (u.name == name) name += "_" + std::to_string(modules_.size());
  }
  for (const char* defined : {kModuleKernel, kModuleCombine}) {
    if (llvm::Function* f = module->getFunction(defined)) {
      f->setName(defined == kModuleKernel ? kernel_symbol(name) : combine_symbol(name));
      f->setLinkage(llvm::GlobalValue::ExternalLinkage);
    }
  }
  if (!module->getFunction(kernel_symbol(name)))
    detail::fail("cpu codegen", "internal error: a kernel module defines no kernel");
  module->setModuleIdentifier(name);
  by_text_.emplace(text, modules_.size());
  modules_.push_back({std::move(context), std::move(module), std::move(text), name});
  return name;
}

std::string kernel_symbol(const std::string& suffix) { return "fx_kernel_" + suffix; }
std::string combine_symbol(const std::string& suffix) { return "fx_combine_" + suffix; }

}  // namespace fluxion::cpu
