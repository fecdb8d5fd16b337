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
#include <llvm/TargetParser/SubtargetFeature.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>

#include "backends/cpu/kernel_modules.h"
#include "codegen_version.h"
#include "fluxion/error.h"
#include "fluxion/runtime.h"
#include "runtime/cpu/helpers.h"
#include "runtime/cpu/object_list.h"
#include "runtime/disk_cache.h"
#include "support/parallel_tasks.h"
#include "support/settings.h"

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

// The x86 vector-function ABI name of a libmvec function: ISA letter ('b' SSE, 'd' AVX2,
// 'e' AVX-512), unmasked, lanes, one 'v' per vector argument.
std::string vector_abi_name(char isa, int lanes, int args, const std::string& name) {
  return "_ZGV" + std::string(1, isa) + "N" + std::to_string(lanes) + std::string(static_cast<size_t>(args), 'v') +
         "_" + name;
}

// What scalar_math's functions carry: the libmvec variant the vectorizer may use for them.
constexpr const char* kVectorVariantAttr = "fluxion-vector-variant";

// The vectorizer's mapping of each scalar_math function of m to its vector variant; the names
// live in `names` for as long as the mapping is used.
std::vector<llvm::VecDesc> scalar_math_variants(const llvm::Module& m, std::deque<std::string>& names) {
  std::vector<llvm::VecDesc> out;
  for (const llvm::Function& f : m) {
    if (!f.hasFnAttribute(kVectorVariantAttr)) continue;
    auto* vt = llvm::cast<llvm::FixedVectorType>(
        m.getFunction(f.getFnAttribute(kVectorVariantAttr).getValueAsString())->getReturnType());
    unsigned lanes = vt->getNumElements();
    llvm::StringRef scalar = names.emplace_back(f.getName().str());
    llvm::StringRef vector = names.emplace_back(f.getFnAttribute(kVectorVariantAttr).getValueAsString().str());
    llvm::StringRef abi = names.emplace_back("_ZGV_LLVM_N" + std::to_string(lanes) + std::string(f.arg_size(), 'v'));
    out.emplace_back(scalar, vector, llvm::ElementCount::getFixed(lanes), false, abi);
  }
  return out;
}

[[noreturn]] void fail_llvm(const std::string& what, llvm::Error e) {
  std::string msg = llvm::toString(std::move(e));
  detail::fail("cpu backend", what + ": " + msg);
}

std::unique_ptr<llvm::TargetMachine> target_machine() {
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) fail_llvm("cannot describe the host CPU", jtmb.takeError());
  jtmb->setCPU(host().cpu);
  jtmb->getFeatures() = llvm::SubtargetFeatures(host().features);
  jtmb->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  auto tm = jtmb->createTargetMachine();
  if (!tm) fail_llvm("cannot create a target machine", tm.takeError());
  return std::move(*tm);
}

// An entry point's module of up to this many LLVM instructions (before optimisation) gets O3,
// a larger one O2.
constexpr size_t kO3MaxInstructions = 2000;

size_t instruction_count(const llvm::Module& m) {
  size_t n = 0;
  for (const llvm::Function& f : m) n += f.getInstructionCount();
  return n;
}

// `kernel_module`: a module of one kernel (KernelModules), optimised at O1. Its hot loops are
// written vectorised and register-tiled already, or vectorised by the loop vectorizer, which O1
// runs too (pto below); O2 and O3 took 1.2-1.6x as long to compile them and ran W1-W7 no faster
// (docs/performance.md, "Kernel choices, measured"). The entry point's module holds the small
// kernels and the loops around them (W7's steps), where O3's unrolling pays.
void optimize(llvm::Module& m, llvm::TargetMachine& tm, bool kernel_module) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  // A kernel module's loops are unrolled where the emitter asks (LoopHint::Unrolled) and nowhere
  // else: its tiles are unrolled already, and LLVM's unrolling passes, which look at every loop,
  // were a fifth of the optimiser's time and made W1-W7 no faster (docs/performance.md).
  pto.LoopUnrolling = !kernel_module;
  llvm::PassBuilder pb(&tm, pto);
  llvm::TargetLibraryInfoImpl tlii(llvm::Triple(m.getTargetTriple()));
  std::deque<std::string> names;
  tlii.addVectorizableFunctions(scalar_math_variants(m, names));
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  // O3's extra unrolling pays off in small programs (tight loops such as W7's); in large ones it
  // costs compile time and gains no speed (docs/performance.md, "Kernel choices, measured").
  llvm::OptimizationLevel level = kernel_module                                ? llvm::OptimizationLevel::O1
                                  : instruction_count(m) <= kO3MaxInstructions ? llvm::OptimizationLevel::O3
                                                                               : llvm::OptimizationLevel::O2;
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(level);
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

// Turns off the host's features above `isa` (for avx512: its 16-bit float extensions, which the
// products of bf16 and f16 operands would use); raises Error when the host lacks `isa` itself
// (its code would not run here).
void lower_features(llvm::StringMap<bool>& f, const std::string& isa) {
  auto has = [&](const char* name) { return f.lookup(name); };
  bool ok = isa == "native" || (isa == "avx2" && has("avx2") && has("fma")) || (isa == "avx512" && has("avx512f"));
  if (!ok) {
    detail::fail("cpu backend", "FLUXION_CPU_FEATURES=" + isa + " asks for instructions this CPU (" +
                                    llvm::sys::getHostCPUName().str() + ") does not have");
  }
  auto off = [&](const std::vector<std::string>& prefixes) {
    for (auto& e : f) {
      for (const std::string& p : prefixes) {
        if (e.first().starts_with(p)) e.second = false;
      }
    }
  };
  if (isa == "avx2") off({"avx512", "evex512", "avx10", "amx"});
  if (isa == "avx512") off({"avx512bf16", "avx512fp16", "avx10", "amx"});
}

// The size of the level-`level` data (or unified) cache of CPU 0, from sysfs; 0 when absent.
int64_t cache_bytes(int level) {
  for (int index = 0; index < 8; ++index) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
    std::ifstream lv(dir + "level"), type(dir + "type"), size(dir + "size");
    int l = 0;
    std::string t, sz;
    if (!(lv >> l) || !(type >> t) || !(size >> sz)) break;
    if (l != level || t == "Instruction") continue;
    int64_t n = std::atoll(sz.c_str());
    char unit = sz.empty() ? 'K' : sz.back();
    return unit == 'M' ? n << 20 : unit == 'K' ? n << 10 : n;
  }
  return 0;
}

// Whether a function of a compiled module is called from outside it: the entry point and the
// kernel modules' functions. Everything else (scalar_math's functions) becomes internal before
// code generation, so that the modules' objects define no symbol twice.
bool exported(llvm::StringRef name) {
  return name == "fx_entry" || std::any_of(kModuleFunctions.begin(), kModuleFunctions.end(), [&](const char* defined) {
           return name.starts_with(module_symbol(defined, ""));
         });
}

// Object code for module m: verified, optimised and compiled on the calling thread, with a
// target machine of its own (one is not shared between threads).
std::string compile_module(llvm::Module& m, bool kernel_module) {
  std::string err;
  llvm::raw_string_ostream es(err);
  if (llvm::verifyModule(m, &es)) detail::fail("cpu backend", "internal error: invalid LLVM IR generated: " + es.str());
  auto tm = target_machine();
  optimize(m, *tm, kernel_module);
  for (llvm::Function& f : m) {
    if (!f.isDeclaration() && !exported(f.getName())) f.setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  if (support::enabled(support::Setting::dump_llvm)) {
    static std::mutex dump_mu;
    std::lock_guard<std::mutex> lock(dump_mu);
    llvm::errs() << "; ---- optimized LLVM IR of module " << m.getModuleIdentifier() << "\n" << m << "\n";
  }
  return object_code(m, *tm);
}

// The modules' indices (the entry point's is modules.size()), largest first: threads that take
// them in this order finish together rather than one compiling the largest while the others
// wait for it.
std::vector<size_t> by_size(const std::vector<KernelModules::Unique>& modules, const llvm::Module& entry) {
  std::vector<size_t> sizes;
  for (const KernelModules::Unique& u : modules) sizes.push_back(instruction_count(*u.module));
  sizes.push_back(instruction_count(entry));
  std::vector<size_t> order(sizes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  return order;
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
    h.requested = support::text(support::Setting::cpu_features);  // native, avx512 or avx2
    lower_features(features, h.requested);
    std::vector<std::string> names;
    for (auto& f : features) names.push_back(f.first().str());
    std::sort(names.begin(), names.end());
    for (const std::string& f : names) h.features += (features.lookup(f) ? "+" : "-") + f + ",";
    h.isa = features.lookup("avx512f") ? "avx512" : features.lookup("avx2") && features.lookup("fma") ? "avx2" : "sse";
    h.vector_bytes = h.isa == "avx512" ? 64 : features.lookup("avx") ? 32 : 16;
    h.matmul_vector_bytes = h.vector_bytes;
    h.vector_registers = h.isa == "avx512" ? 32 : 16;
    h.bf16_products = h.isa == "avx512" && features.lookup("avx512bf16");
    h.l1d_bytes = cache_bytes(1);
    h.l2_bytes = cache_bytes(2);
    return h;
  }();
  return info;
}

std::string libm_name(std::string_view name, DType t) { return std::string(name) + (t == DType::f32 ? "f" : ""); }

std::string libmvec_variant(const std::string& name, int lanes, int elem_bytes, int args) {
  int bytes = lanes * elem_bytes;
  if (!libmvec_loaded() || bytes > host().vector_bytes) return "";
  char isa = bytes == 16 ? 'b' : bytes == 32 ? 'd' : bytes == 64 ? 'e' : 0;
  if (!isa) return "";
  // glibc before 2.35 lacks some (tanh, erf, expm1, log1p, atan2): only name what links.
  std::string variant = vector_abi_name(isa, lanes, args, name);
  return llvm::sys::DynamicLibrary::SearchForAddressOfSymbol(variant) ? variant : "";
}

llvm::Function* scalar_math(llvm::Module& m, const std::string& name, llvm::Type* ty, int args) {
  std::string fname = "fluxion_math_" + name;
  if (llvm::Function* f = m.getFunction(fname)) return f;
  llvm::LLVMContext& c = m.getContext();
  std::vector<llvm::Type*> params(static_cast<size_t>(args), ty);
  // External and never inlined: the vectorizer must see calls of this exact signature (it
  // widens calls, not bodies), and an internal function loses an argument that every call
  // passes as the same constant (atan2(x, 2)).
  auto* f =
      llvm::Function::Create(llvm::FunctionType::get(ty, params, false), llvm::Function::ExternalLinkage, fname, m);
  f->addFnAttr(llvm::Attribute::NoInline);
  // It returns, throws nothing and touches no memory: without `willreturn` a store after its
  // call is not certain to run, so LICM kept a row sum's accumulator in memory and the loop
  // stayed scalar (sum(exp(x), {1}) over 256 x 4096: 3.7 ms against 0.3 for exp alone).
  f->addFnAttr(llvm::Attribute::WillReturn);
  f->setDoesNotThrow();
  f->setDoesNotAccessMemory();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(c, "entry", f));
  int elem_bytes = static_cast<int>(ty->getPrimitiveSizeInBits() / 8);
  int lanes = host().vector_bytes / elem_bytes;
  std::string variant = libmvec_variant(name, lanes, elem_bytes, args);
  auto declare = [&](const std::string& callee, llvm::Type* t) {
    llvm::FunctionCallee fc =
        m.getOrInsertFunction(callee, llvm::FunctionType::get(t, std::vector<llvm::Type*>(params.size(), t), false));
    auto* fn = llvm::cast<llvm::Function>(fc.getCallee());
    fn->addFnAttr(llvm::Attribute::WillReturn);
    fn->setDoesNotThrow();
    fn->setDoesNotAccessMemory();
    return fc;
  };
  std::vector<llvm::Value*> in;
  for (llvm::Argument& a : f->args()) in.push_back(&a);
  if (variant.empty()) {
    b.CreateRet(b.CreateCall(declare(name, ty), in));
    return f;
  }
  auto* vt = llvm::FixedVectorType::get(ty, static_cast<unsigned>(lanes));
  for (llvm::Value*& x : in) x = b.CreateVectorSplat(static_cast<unsigned>(lanes), x);
  b.CreateRet(b.CreateExtractElement(b.CreateCall(declare(variant, vt), in), uint64_t{0}));
  f->addFnAttr(kVectorVariantAttr, variant);
  return f;
}

std::unique_ptr<NativeCode> build_native(const std::string& key, const EmitModules& emit) {
  init_llvm();
  std::string host_key = "\nllvm " LLVM_VERSION_STRING "\ncpu " + host().cpu + "\n" + host().features;
  std::string full_key = key + host_key;
  auto code = std::make_unique<OrcCode>();
  std::string blob = runtime::disk_cache_load(full_key, &code->from_disk_cache);
  std::optional<std::vector<std::string>> cached_objects;
  if (code->from_disk_cache) cached_objects = decode_objects(blob);
  code->from_disk_cache = cached_objects.has_value();
  if (cached_objects) code->objects = std::move(*cached_objects);
  if (!code->from_disk_cache) {
    auto tm = target_machine();
    llvm::LLVMContext ctx;
    llvm::Module entry("fluxion", ctx);
    entry.setDataLayout(tm->createDataLayout());
    entry.setTargetTriple(tm->getTargetTriple().str());
    KernelModules kernels(entry.getDataLayout(), entry.getTargetTriple());
    emit(entry, kernels);
    std::vector<KernelModules::Unique>& modules = kernels.modules();
    code->modules = modules.size();
    // The kernel modules, then the entry point: its calls of the kernels link against them.
    code->objects.resize(modules.size() + 1);
    std::vector<size_t> largest_first = by_size(modules, entry);
    std::atomic<size_t> found{0};
    code->threads = support::for_each_in_parallel(modules.size() + 1, fluxion::num_threads(), [&](size_t task) {
      size_t i = largest_first[task];
      if (i == modules.size()) {
        code->objects[i] = compile_module(entry, false);
        return;
      }
      std::string module_key = "fluxion kernel module " FLUXION_CODEGEN_HASH "\n" + modules[i].text + host_key;
      bool cached = false;
      code->objects[i] = runtime::disk_cache_load(module_key, &cached);
      if (cached) {
        ++found;
        return;
      }
      code->objects[i] = compile_module(*modules[i].module, true);
      runtime::disk_cache_store(module_key, code->objects[i]);
    });
    code->modules_from_disk_cache = found.load();
    runtime::disk_cache_store(full_key, encode_objects(code->objects));
  }
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) fail_llvm("cannot create the JIT", jit.takeError());
  llvm::orc::JITDylib& lib = (*jit)->getMainJITDylib();
  auto process =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*jit)->getDataLayout().getGlobalPrefix());
  if (!process) fail_llvm("cannot search the process for symbols", process.takeError());
  lib.addGenerator(std::move(*process));
  if (libmvec_loaded()) {
    auto mvec =
        llvm::orc::DynamicLibrarySearchGenerator::Load("libmvec.so.1", (*jit)->getDataLayout().getGlobalPrefix());
    if (!mvec) fail_llvm("cannot search libmvec for symbols", mvec.takeError());
    lib.addGenerator(std::move(*mvec));
  }
  llvm::orc::SymbolMap helpers;
  for (const RuntimeSymbol& s : runtime_symbols()) {
    helpers[(*jit)->mangleAndIntern(s.name)] = {llvm::orc::ExecutorAddr::fromPtr(s.address),
                                                llvm::JITSymbolFlags::Exported};
  }
  if (auto e = lib.define(llvm::orc::absoluteSymbols(std::move(helpers))))
    fail_llvm("cannot register runtime helpers", std::move(e));
  for (const std::string& object : code->objects) {
    if (auto e = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object)))
      fail_llvm("cannot load object code", std::move(e));
  }
  auto sym = (*jit)->lookup("fx_entry");
  if (!sym) fail_llvm("cannot link the program", sym.takeError());
  code->entry = sym->toPtr<EntryFn>();
  code->jit = std::move(*jit);
  return code;
}

}  // namespace fluxion::cpu

namespace fluxion {

CpuTarget cpu_target() {
  const cpu::HostInfo& h = cpu::host();
  return {h.isa, h.cpu, h.requested, 8 * h.vector_bytes, h.vector_registers, h.l1d_bytes, h.l2_bytes, h.bf16_products};
}

}  // namespace fluxion
