// Compiled into every executable of a sanitizer build (FLUXION_SANITIZE): the options and
// suppressions the sanitizer runtimes read at start-up, so that a test binary behaves the same
// under ctest, under gtest's test discovery at build time, and when run by hand. Environment
// variables (ASAN_OPTIONS, LSAN_OPTIONS) still override these.
//
// Why a Vulkan driver needs any of this: the Vulkan loader loads every installed driver (ICD)
// and unloads it with dlclose when it is not needed any more, several times per process. A
// driver keeps allocations reachable from its own globals until exit; once it is unmapped
// those globals are gone, so LeakSanitizer reports the allocations as leaked, and their stack
// frames point into unmapped memory that no module name can match. Newer loaders offer
// VK_LOADER_DISABLE_DYNAMIC_LIBRARY_UNLOADING for sanitizer builds; Debian 12's loader (1.3.239)
// does not, so the executable keeps every library it loads mapped, as that option does.
extern "C" {

// The executable's definition comes first in symbol lookup, ahead of libc's and the sanitizer
// runtime's, so the loader's dlclose resolves here. Libraries stay loaded until exit.
int dlclose(void*) { return 0; }

// The interpreter's out-of-memory errors need allocations that fail to return null.
const char* __asan_default_options() { return "allocator_may_return_null=1"; }

// With drivers kept mapped, what a driver really leaks is attributed to its module. Only the
// drivers, the LLVM that Mesa's drivers load and the Khronos validation layer (loaded under
// FLUXION_VULKAN_VALIDATION=1: its per-object tracking state, referenced from what lavapipe
// keeps until exit, shows as indirect leaks) are named, and Open MPI's libraries and components
// (mca_*.so) and hwloc, which keep start-up state past MPI_Finalize (one of them, with more than one
// rank, leaks a vasprintf'd string whose caller's frame cannot be unwound: Fluxion does not
// call vasprintf); a leak in Fluxion's code (the library is linked statically into the
// executable) matches none of these.
const char* __lsan_default_suppressions() {
  return "leak:libvulkan_lvp.so\n"
         "leak:libvulkan_intel.so\n"
         "leak:libvulkan_intel_hasvk.so\n"
         "leak:libvulkan_radeon.so\n"
         "leak:libLLVM-15.so\n"
         "leak:libLLVM.so.15\n"
         "leak:libVkLayer_khronos_validation.so\n"
         "leak:libmpi.so\n"
         "leak:libopen-pal.so\n"
         "leak:libopen-rte.so\n"
         "leak:libpmix.so\n"
         "leak:/openmpi/lib/openmpi3/mca_\n"
         "leak:libhwloc.so\n"
         "leak:__vasprintf_internal\n";
}
}
