#include "backends/cpu/native.h"

#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <mutex>

#include "backends/cpu/disk_cache.h"
#include "backends/cpu/runtime.h"
#include "fluxion/error.h"

namespace fluxion::cpu {
namespace {

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

// glibc's vector math library: when it loads, LLVM may vectorise exp/log/sin/cos/pow calls.
bool libmvec_loaded() {
  static const bool loaded = !llvm::sys::DynamicLibrary::LoadLibraryPermanently("libmvec.so.1");
  return loaded;
}

// glibc >= 2.35 has vector variants of these too, which LLVM 19's LIBMVEC-X86 table lacks:
// 'b' is the SSE variant (4 floats / 2 doubles), 'd' the AVX2 one (8 / 4).
std::vector<llvm::VecDesc> more_libmvec_functions(bool avx2) {
  using llvm::ElementCount;
  std::vector<llvm::VecDesc> v{
      {"tanhf", "_ZGVbN4v_tanhf", ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
      {"expm1f", "_ZGVbN4v_expm1f", ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
      {"log1pf", "_ZGVbN4v_log1pf", ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
      {"erff", "_ZGVbN4v_erff", ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
      {"atan2f", "_ZGVbN4vv_atan2f", ElementCount::getFixed(4), false, "_ZGV_LLVM_N4vv"},
      {"tanh", "_ZGVbN2v_tanh", ElementCount::getFixed(2), false, "_ZGV_LLVM_N2v"},
      {"expm1", "_ZGVbN2v_expm1", ElementCount::getFixed(2), false, "_ZGV_LLVM_N2v"},
      {"log1p", "_ZGVbN2v_log1p", ElementCount::getFixed(2), false, "_ZGV_LLVM_N2v"},
      {"erf", "_ZGVbN2v_erf", ElementCount::getFixed(2), false, "_ZGV_LLVM_N2v"},
      {"atan2", "_ZGVbN2vv_atan2", ElementCount::getFixed(2), false, "_ZGV_LLVM_N2vv"},
  };
  if (avx2) {
    std::vector<llvm::VecDesc> wide{
        {"tanhf", "_ZGVdN8v_tanhf", ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
        {"expm1f", "_ZGVdN8v_expm1f", ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
        {"log1pf", "_ZGVdN8v_log1pf", ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
        {"erff", "_ZGVdN8v_erff", ElementCount::getFixed(8), false, "_ZGV_LLVM_N8v"},
        {"atan2f", "_ZGVdN8vv_atan2f", ElementCount::getFixed(8), false, "_ZGV_LLVM_N8vv"},
        {"tanh", "_ZGVdN4v_tanh", ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
        {"expm1", "_ZGVdN4v_expm1", ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
        {"log1p", "_ZGVdN4v_log1p", ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
        {"erf", "_ZGVdN4v_erf", ElementCount::getFixed(4), false, "_ZGV_LLVM_N4v"},
        {"atan2", "_ZGVdN4vv_atan2", ElementCount::getFixed(4), false, "_ZGV_LLVM_N4vv"},
    };
    v.insert(v.end(), wide.begin(), wide.end());
  }
  return v;
}

[[noreturn]] void fail_llvm(const std::string& what, llvm::Error e) {
  std::string msg = llvm::toString(std::move(e));
  detail::fail("cpu backend", what + ": " + msg);
}

std::unique_ptr<llvm::TargetMachine> target_machine() {
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) fail_llvm("cannot describe the host CPU", jtmb.takeError());
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = jtmb->createTargetMachine();
  if (!tm) fail_llvm("cannot create a target machine", tm.takeError());
  return std::move(*tm);
}

void optimize(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, pto);
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(m.getTargetTriple()));
  if (libmvec_loaded()) {
    tlii.addVectorizableFunctionsFromVecLib(llvm::TargetLibraryInfoImpl::LIBMVEC_X86, llvm::Triple(m.getTargetTriple()));
    tlii.addVectorizableFunctions(more_libmvec_functions(host().vector_bytes >= 32));
  }
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(m, mam);
}

std::string object_code(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    detail::fail("cpu backend", "LLVM cannot emit object code for this host");
  }
  pm.run(m);
  return std::string(buf.data(), buf.size());
}

class OrcCode final : public NativeCode {
 public:
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

}  // namespace

const HostInfo& host() {
  static const HostInfo info = [] {
    init_llvm();
    HostInfo h;
    h.cpu = llvm::sys::getHostCPUName().str();
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    std::vector<std::string> on;
    for (auto& f : features) {
      if (f.second) on.push_back(f.first().str());
    }
    std::sort(on.begin(), on.end());
    for (const std::string& f : on) h.features += "+" + f + ",";
    // 256-bit vectors where AVX is present (LLVM's own preference on AVX-512 parts too).
    h.vector_bytes = features.lookup("avx") ? 32 : 16;
    h.matmul_vector_bytes = features.lookup("avx512f") ? 64 : h.vector_bytes;
    return h;
  }();
  return info;
}

std::unique_ptr<NativeCode> build_native(const std::string& key, const std::function<void(llvm::Module&)>& emit) {
  init_llvm();
  std::string full_key = key + "\nllvm " LLVM_VERSION_STRING "\ncpu " + host().cpu + "\n" + host().features;
  bool cached = false;
  std::string object = disk_cache_load(full_key, &cached);
  if (!cached) {
    auto tm = target_machine();
    llvm::LLVMContext ctx;
    llvm::Module m("fluxion", ctx);
    m.setDataLayout(tm->createDataLayout());
    m.setTargetTriple(tm->getTargetTriple().str());
    emit(m);
    std::string err;
    llvm::raw_string_ostream es(err);
    if (llvm::verifyModule(m, &es)) detail::fail("cpu backend", "internal error: invalid LLVM IR generated: " + es.str());
    optimize(m, *tm);
    object = object_code(m, *tm);
    disk_cache_store(full_key, object);
  }
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) fail_llvm("cannot create the JIT", jit.takeError());
  llvm::orc::JITDylib& lib = (*jit)->getMainJITDylib();
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!process) fail_llvm("cannot search the process for symbols", process.takeError());
  lib.addGenerator(std::move(*process));
  if (libmvec_loaded()) {
    auto mvec = llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", (*jit)->getDataLayout().getGlobalPrefix());
    if (!mvec) fail_llvm("cannot search libmvec for symbols", mvec.takeError());
    lib.addGenerator(std::move(*mvec));
  }
  llvm::orc::SymbolMap helpers;
  for (const RuntimeSymbol& s : runtime_symbols()) {
    helpers[(*jit)->mangleAndIntern(s.name)] = {llvm::orc::ExecutorAddr::fromPtr(s.address), llvm::JITSymbolFlags::Exported};
  }
  if (auto e = lib.define(llvm::orc::absoluteSymbols(std::move(helpers)))) fail_llvm("cannot register runtime helpers", std::move(e));
  if (auto e = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object))) fail_llvm("cannot load object code", std::move(e));
  auto sym = (*jit)->lookup("fx_entry");
  if (!sym) fail_llvm("cannot link the program", sym.takeError());
  auto code = std::make_unique<OrcCode>();
  code->entry = sym->toPtr<EntryFn>();
  code->from_disk_cache = cached;
  code->jit = std::move(*jit);
  return code;
}

}  // namespace fluxion::cpu
