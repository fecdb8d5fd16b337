// Native code from an LLVM module: optimisation for the host CPU, object code generation, the
// on-disk object cache and ORC LLJIT linking (native.cpp). LLVM stays behind this interface.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fluxion/dtype.h"
#include "runtime/cpu/program.h"

namespace llvm {
class Function;
class Module;
class Type;
}  // namespace llvm

namespace fluxion::cpu {

class KernelModules;

// Linked code of one program; the entry point stays valid while this lives.
class NativeCode {
 public:
  virtual ~NativeCode() = default;
  EntryFn entry = nullptr;
  // The object code linked (what Compiled::save exports): one object per kernel module, the
  // entry point's last.
  std::vector<std::string> objects;
  bool from_disk_cache = false;
  // The distinct kernel modules, and how many of them were found compiled in the on-disk cache.
  size_t modules = 0, modules_from_disk_cache = 0;
  int threads = 0;  // that compiled the modules (0: none compiled)
};

// Facts about the host the generated code is specialised for, and the cache key part they form:
// the host's own CPU and features, or lower ones that FLUXION_CPU_FEATURES asks for
// (fluxion::cpu_target()).
struct HostInfo {
  std::string cpu;        // LLVM's name of the host CPU (its scheduling model)
  std::string features;   // LLVM subtarget features, "+avx2,-avx512f,..."
  std::string isa;        // "avx512", "avx2" or "sse": the widest vectors code is generated for
  std::string requested;  // FLUXION_CPU_FEATURES, or "native"
  int vector_bytes = 16;
  int matmul_vector_bytes = 16;         // 64 with AVX-512: the register tiles of a matmul use all of it
  int vector_registers = 16;            // 32 with AVX-512
  bool bf16_products = false;           // AVX-512-BF16 (with AVX-512's 64-byte vectors)
  int64_t l1d_bytes = 0, l2_bytes = 0;  // per core; 0 where the machine does not say
};
const HostInfo& host();

// The C math library's function for the op table's math name (its double-precision name,
// ir::OpInfo::math) at dtype t: "expm1" is expm1f for f32, expm1 for f64.
std::string libm_name(std::string_view name, DType t);

// glibc's libmvec variant of the scalar math function `name` ("expf", "tanh", ...) on `lanes`
// elements of `elem_bytes` bytes with `args` vector arguments (its vector-ABI name, e.g.
// _ZGVeN16v_expf), or "" when libmvec is missing or the host lacks that vector width.
std::string libmvec_variant(const std::string& name, int lanes, int elem_bytes, int args);

// The function of module m that computes the math function `name` ("expf", "tanh", ...) of one
// element of type ty with `args` arguments. Every element a kernel computes, in a vectorized
// loop or in its scalar remainder, gets the same bits from it: it runs libmvec's variant at the
// host's full vector width on lane 0 (libm where libmvec has none), and optimize() tells the
// vectorizer that this very variant is its vector form. A thread's range of a kernel ends where
// a scalar remainder starts, so the results do not depend on the thread count (with glibc's
// scalar expf against libmvec's, they did).
llvm::Function* scalar_math(llvm::Module& m, const std::string& name, llvm::Type* ty, int args);

// Produces native code for the program whose cache key is `key`: from the on-disk cache when it
// holds the objects, otherwise by calling `emit` to fill the entry point's module and the kernel
// modules, then optimising (kernel modules at O1, the entry point's at O3, or O2 when large;
// host CPU) and generating code for each module on up to fluxion::num_threads() threads, a
// kernel module found in the cache (compiled for another program) excepted. Raises Error on
// failure.
using EmitModules = std::function<void(llvm::Module& entry, KernelModules& kernels)>;
std::unique_ptr<NativeCode> build_native(const std::string& key, const EmitModules& emit);

}  // namespace fluxion::cpu
