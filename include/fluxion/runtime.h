// Run-time settings and counters shared by every backend: the CPU thread pool's size, and the
// counts a benchmark or test reads to check that a call did not bounce to the host.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace fluxion {

// Threads the CPU backend runs parallel kernels on. The default is every core the machine
// has (std::thread::hardware_concurrency), or FLUXION_NUM_THREADS when set (a value that is not
// a positive integer raises Error, from num_threads() or a CPU program's compile or load). n < 1
// raises Error. Takes effect for the next call of a compiled program.
void set_num_threads(int n);
int num_threads();

// What the CPU backend generates code for. FLUXION_CPU_FEATURES=avx2 (or avx512, AVX-512
// without its 16-bit float extensions; default native) makes it target a lower instruction set
// than the host has, so that another machine's code paths run, and are tested, here; one the
// host lacks raises Error at the first compile.
struct CpuTarget {
  std::string isa;                      // "avx512", "avx2" or "sse" (a host without AVX2)
  std::string cpu;                      // LLVM's name of the host CPU, e.g. "znver4"
  std::string requested;                // FLUXION_CPU_FEATURES, or "native"
  int vector_bits = 0;                  // 512, 256 or 128
  int vector_registers = 0;             // 32 with AVX-512, else 16
  int64_t l1d_bytes = 0, l2_bytes = 0;  // per core; 0 where the machine does not say
  bool bf16_products = false;           // bf16 products as AVX-512-BF16 dot products (not with avx512)
};
CpuTarget cpu_target();

// Counts since the last reset_counters(), summed over all compiled programs and threads.
struct RuntimeCounters {
  uint64_t program_calls = 0;       // calls of a compiled program (Compiled::run and Jit calls)
  uint64_t native_calls = 0;        // host round trips: CPU calls into native code, Vulkan queue
                                    // submissions of a program (one per program call on both)
  uint64_t kernel_launches = 0;     // kernels run (Vulkan: dispatches), loop iterations included
  uint64_t submissions = 0;         // Vulkan queue submissions (compile-time uploads included)
  uint64_t fence_waits = 0;         // Vulkan waits for the device
  uint64_t compiles = 0;            // programs compiled (a compile-cache hit does not count)
  uint64_t cache_hits = 0;          // in-memory compile-cache hits
  uint64_t disk_cache_hits = 0;     // programs loaded from the on-disk cache instead of compiled
  uint64_t traces = 0;              // functions traced into programs (jit, compile_flat)
  uint64_t loads = 0;               // exported programs loaded (fluxion::load), none compiled
  uint64_t device_allocations = 0;  // Vulkan buffers carved from device or staging memory; a
                                    // buffer reused from those freed earlier does not count
  uint64_t collective_wait_ns = 0;  // time CPU and Vulkan programs' calling threads spent waiting
                                    // for their collectives (docs/distributed.md)
};
RuntimeCounters counters();
void reset_counters();

// The numerics check (like JAX's debug_nans and debug_infs). When on, every call of a compiled
// program checks its float results for NaN and infinity; when one holds any, the program is
// replayed op by op on the reference interpreter with the same inputs, and the call raises
// Error naming the first op that produced a non-finite value, its source line, and the kernel
// of the compiled program that contains it (or the input that already held one). Costs a read
// of every result (a copy to the host on Vulkan), so it is a debugging mode; off by default,
// or on when the environment sets FLUXION_CHECK_NUMERICS=1. A NaN that a later op masks (a
// `where` discarding it) leaves the results finite and is not reported.
void set_check_numerics(bool on);
bool check_numerics();

// Where the lines of fluxion::debug::print (fluxion/debug.h) go: the handler is called with each
// line, without its newline, on the thread that runs the program. The default (an empty handler)
// writes the line and a newline to standard output and flushes it. Returns the handler it
// replaces. Loaded programs (fluxion/compiled.h) print through it too.
using PrintHandler = std::function<void(const std::string& line)>;
PrintHandler set_print_handler(PrintHandler handler);

}  // namespace fluxion
