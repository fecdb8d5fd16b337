// Replaces the global operator new/delete and interposes the C allocator entry points (glibc
// supports replacing malloc in the main program). Every replacement forwards to glibc's own
// allocator (__libc_*), so memory from either side can be freed by the other, and operator new
// is counted once, not again by the malloc it would otherwise call.
#include "alloc_counter.h"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <new>

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void* __libc_valloc(size_t);
void* __libc_pvalloc(size_t);
void __libc_free(void*);
}

namespace {

std::atomic<bool> counting{false};
std::atomic<uint64_t> calls{0};
std::atomic<uint64_t> bytes{0};

inline void note(size_t n) {
  if (counting.load(std::memory_order_relaxed)) {
    calls.fetch_add(1, std::memory_order_relaxed);
    bytes.fetch_add(n, std::memory_order_relaxed);
  }
}

void* new_or_throw(size_t n, size_t align) {
  note(n);
  if (n == 0) n = 1;
  void* p = align > alignof(std::max_align_t) ? __libc_memalign(align, n) : __libc_malloc(n);
  if (!p) throw std::bad_alloc();
  return p;
}

void* new_or_null(size_t n, size_t align) noexcept {
  note(n);
  if (n == 0) n = 1;
  return align > alignof(std::max_align_t) ? __libc_memalign(align, n) : __libc_malloc(n);
}

}  // namespace

namespace bench {

void start_alloc_counting() {
  calls.store(0);
  bytes.store(0);
  counting.store(true);
}

AllocCounts stop_alloc_counting() {
  counting.store(false);
  return {calls.load(), bytes.load()};
}

}  // namespace bench

// ---- C allocator.
extern "C" {
void* malloc(size_t n) noexcept {
  note(n);
  return __libc_malloc(n);
}
void* calloc(size_t count, size_t size) noexcept {
  note(count * size);
  return __libc_calloc(count, size);
}
void* realloc(void* p, size_t n) noexcept {
  note(n);
  return __libc_realloc(p, n);
}
void free(void* p) noexcept { __libc_free(p); }
int posix_memalign(void** out, size_t align, size_t n) noexcept {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  note(n);
  void* p = __libc_memalign(align, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void* aligned_alloc(size_t align, size_t n) noexcept {
  note(n);
  return __libc_memalign(align, n);
}
void* memalign(size_t align, size_t n) noexcept {
  note(n);
  return __libc_memalign(align, n);
}
void* valloc(size_t n) noexcept {
  note(n);
  return __libc_valloc(n);
}
void* pvalloc(size_t n) noexcept {
  note(n);
  return __libc_pvalloc(n);
}
}

// ---- C++ allocation functions.
void* operator new(size_t n) { return new_or_throw(n, 0); }
void* operator new[](size_t n) { return new_or_throw(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return new_or_throw(n, static_cast<size_t>(a)); }
void* operator new[](size_t n, std::align_val_t a) { return new_or_throw(n, static_cast<size_t>(a)); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return new_or_null(n, 0); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return new_or_null(n, 0); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return new_or_null(n, static_cast<size_t>(a));
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return new_or_null(n, static_cast<size_t>(a));
}
void operator delete(void* p) noexcept { __libc_free(p); }
void operator delete[](void* p) noexcept { __libc_free(p); }
void operator delete(void* p, size_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { __libc_free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { __libc_free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { __libc_free(p); }
