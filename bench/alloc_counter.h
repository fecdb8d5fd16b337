// Heap allocation counting for the benchmark binary: every operator new and every call of the C
// allocator (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc) in the
// process, on any thread, while counting is switched on. libtorch's CPU allocator uses
// posix_memalign and OpenBLAS malloc, so counting operator new alone would miss them.
#pragma once

#include <cstdint>

namespace bench {

struct AllocCounts {
  uint64_t calls = 0;  // allocations (a realloc counts as one)
  uint64_t bytes = 0;  // bytes requested by them
};

// Starts counting from zero. Counting is off until this is called.
void start_alloc_counting();
// Stops counting and returns what was counted since start_alloc_counting().
AllocCounts stop_alloc_counting();

}  // namespace bench
