#include "runtime/cpu/program.h"

#include <algorithm>
#include <cstring>
#include <new>

#include <sys/mman.h>

#include "fluxion/error.h"
#include "fluxion/runtime.h"
#include "runtime/counters.h"
#include "runtime/cpu/helpers.h"
#include "runtime/host_memory.h"
#include "support/round_up.h"

namespace fluxion::cpu {
namespace {

bool overlap(const char* p, int64_t bytes, const Array& a) {
  const char* q = static_cast<const char*>(a.data());
  int64_t qb = a.size() * dtype_size(a.dtype());
  return bytes > 0 && qb > 0 && p < q + qb && q < p + bytes;
}

int64_t bytes_of(const TensorType& t) { return t.numel() * dtype_size(t.dtype); }

}  // namespace

namespace {

// A first call touches its arena page by page: tens of megabytes are thousands of faults of a
// small page, which cost a fresh process as much as a third of a step. Large arenas are
// aligned to, and ask for, transparent huge pages, which a few faults fill.
constexpr size_t kHugePage = size_t{2} << 20;

size_t arena_alignment(int64_t bytes) { return static_cast<size_t>(bytes) >= kHugePage ? kHugePage : 64; }

}  // namespace

void CpuProgram::ArenaDeleter::operator()(char* p) const { ::operator delete[](p, std::align_val_t(alignment)); }

CpuProgram::CpuProgram(CpuLayout layout) : layout_(std::move(layout)) {
  layout_.arena_bytes = std::max<int64_t>(layout_.arena_bytes, 64);
  free_.reserve(16);
  // The thread count's first reading raises an Error for a bad FLUXION_NUM_THREADS here: the
  // generated code that asks for it later cannot pass an exception on.
  num_threads();
}

CpuProgram::~CpuProgram() = default;

std::vector<Array> CpuProgram::run(const std::vector<Array>& inputs, EntryFn entry) const {
  runtime::check_host_memory(layout_.label, runtime::host_bytes(layout_.outputs), layout_.arena_bytes);
  std::vector<Array> out = runtime::allocate_results(layout_.label, layout_.outputs);
  run_into(inputs, out, entry);
  return out;
}

void CpuProgram::run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs, EntryFn entry) const {
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (layout_.output_slots[k] < 0 && overlaps_any(inputs, outputs, k)) {
      // A result the entry point copies out at its end cannot be staged: run into fresh
      // buffers, then copy.
      std::vector<Array> fresh = run(inputs, entry);
      for (size_t j = 0; j < outputs.size(); ++j) {
        std::memcpy(outputs[j].mutable_data(), fresh[j].data(),
                    static_cast<size_t>(fresh[j].size() * dtype_size(fresh[j].dtype())));
      }
      return;
    }
  }
  size_t ni = inputs.size(), n = ni + outputs.size();
  constexpr size_t kStackSlots = 64;
  void* stack_io[kStackSlots];
  std::vector<void*> heap_io;
  void** io = stack_io;
  if (n > kStackSlots) {
    heap_io.resize(n);
    io = heap_io.data();
  }
  for (size_t i = 0; i < ni; ++i) io[i] = const_cast<void*>(inputs[i].data());
  runtime::check_host_memory(layout_.label, 0, layout_.arena_bytes);
  Arena arena = take_arena();
  // An output buffer that overlaps an input or another output is written through its arena
  // slot and copied out after the call, so no input is read after being overwritten.
  for (size_t k = 0; k < outputs.size(); ++k) {
    io[ni + k] = staged(inputs, outputs, k) ? arena.get() + layout_.output_slots[k] : outputs[k].mutable_data();
  }
  int64_t launches = 0;
  int32_t rc = entry(io, arena.get(), &launches);
  finish_collectives();
  auto& c = runtime::counters();
  c.program_calls++;
  c.native_calls++;
  c.kernel_launches += static_cast<uint64_t>(launches);
  for (size_t k = 0; k < outputs.size(); ++k) {
    if (staged(inputs, outputs, k)) {
      std::memcpy(outputs[k].mutable_data(), arena.get() + layout_.output_slots[k],
                  static_cast<size_t>(bytes_of(layout_.outputs[k])));
    }
  }
  give_arena(std::move(arena));
  if (rc == kCollectiveFailed) std::rethrow_exception(take_collective_failure());
  if (rc >= kWhileMaxIters) {
    detail::fail("while", "the loop exceeded max_iters=" + std::to_string(rc - kWhileMaxIters) +
                              " (its condition was still true)");
  }
}

// Whether result k goes through its arena slot: it has one, and its buffer overlaps an input or
// an earlier output.
bool CpuProgram::staged(const std::vector<Array>& inputs, const std::vector<Array>& outputs, size_t k) const {
  return layout_.output_slots[k] >= 0 && overlaps_any(inputs, outputs, k);
}

bool CpuProgram::overlaps_any(const std::vector<Array>& inputs, const std::vector<Array>& outputs, size_t k) const {
  const char* p = static_cast<const char*>(outputs[k].data());
  int64_t bytes = bytes_of(layout_.outputs[k]);
  for (const Array& in : inputs) {
    if (overlap(p, bytes, in)) return true;
  }
  for (size_t j = 0; j < k; ++j) {
    if (overlap(p, bytes, outputs[j])) return true;
  }
  return false;
}

CpuProgram::Arena CpuProgram::take_arena() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      Arena a = std::move(free_.back());
      free_.pop_back();
      return a;
    }
  }
  try {
    size_t alignment = arena_alignment(layout_.arena_bytes);
    size_t bytes = support::round_up(static_cast<size_t>(layout_.arena_bytes), alignment);
    Arena a(static_cast<char*>(::operator new[](bytes, std::align_val_t(alignment))), ArenaDeleter{alignment});
    if (alignment == kHugePage) madvise(a.get(), bytes, MADV_HUGEPAGE);  // advice: failure only costs speed
    return a;
  } catch (const std::bad_alloc&) {
    runtime::fail_allocation(layout_.label, "the working memory (arena)", layout_.arena_bytes);
  }
}

void CpuProgram::give_arena(Arena a) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (free_.capacity() == free_.size()) return;  // keep the pool allocation-free
  free_.push_back(std::move(a));
}

}  // namespace fluxion::cpu
