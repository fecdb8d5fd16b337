#include "backends/cpu/kernel_modules.h"

#include <llvm/IR/DataLayout.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>

#include "fluxion/error.h"
#include "support/fnv1a.h"

namespace fluxion::cpu {

KernelModules::KernelModules(const llvm::DataLayout& layout, std::string triple)
    : layout_(layout.getStringRepresentation()), triple_(std::move(triple)) {}

KernelModules::~KernelModules() = default;

std::pair<std::unique_ptr<llvm::LLVMContext>, std::unique_ptr<llvm::Module>> KernelModules::make() const {
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("kernel", *context);
  module->setDataLayout(layout_);
  module->setTargetTriple(triple_);
  return {std::move(context), std::move(module)};
}

std::string KernelModules::add(std::unique_ptr<llvm::LLVMContext> context, std::unique_ptr<llvm::Module> module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, nullptr);
  os.flush();
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(support::fnv1a(text)));
  // A module of another text under the same hash (never seen, but possible) takes a suffix.
  std::string name = hash;
  for (auto seen = by_name_.find(name); seen != by_name_.end(); seen = by_name_.find(name)) {
    if (modules_[seen->second].text == text) {
      module.reset();  // before its context: the order parameters are destroyed in is the compiler's
      return name;
    }
    name += "_";
  }
  for (const char* defined : kModuleFunctions) {
    if (llvm::Function* f = module->getFunction(defined)) {
      f->setName(module_symbol(defined, name));
      f->setLinkage(llvm::GlobalValue::ExternalLinkage);
    }
  }
  if (!module->getFunction(module_symbol(kModuleKernel, name)))
    detail::fail("cpu codegen", "internal error: a kernel module defines no kernel");
  module->setModuleIdentifier(name);
  by_name_.emplace(name, modules_.size());
  modules_.push_back({std::move(context), std::move(module), std::move(text), name});
  return name;
}

std::string module_symbol(const char* defined, const std::string& suffix) {
  return "fx_" + std::string(defined) + "_" + suffix;
}

}  // namespace fluxion::cpu
