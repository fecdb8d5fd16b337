// A CPU program's calls: the entry point's io table, the pool of arenas that lets concurrent
// calls run without sharing scratch memory (and a steady-state call allocate nothing), results
// staged through the arena when they overlap an input, and the entry point's error codes. The
// JIT's executable and a loaded artifact run their native code through this one class.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fluxion/array.h"

namespace fluxion::cpu {

// The generated entry point: io holds the inputs' then the results' data pointers; it returns
// an ErrorCode (runtime/cpu/helpers.h) and adds the kernels it ran to *launches.
using EntryFn = int32_t (*)(void** io, char* arena, int64_t* launches);

// What a call needs to know of a program besides its code.
struct CpuLayout {
  std::vector<TensorType> outputs;
  // The arena offset of result k when the program writes it in place there, else -1 (the
  // entry point copies it out at its end: a passed-through input, a loop's carry).
  std::vector<int64_t> output_slots;
  int64_t arena_bytes = 64;  // at least one cache line
  std::string label;         // how errors name the program (runtime::program_label)
};

class CpuProgram {
 public:
  explicit CpuProgram(CpuLayout layout);
  ~CpuProgram();
  CpuProgram(const CpuProgram&) = delete;
  CpuProgram& operator=(const CpuProgram&) = delete;

  std::vector<Array> run(const std::vector<Array>& inputs, EntryFn entry) const;
  void run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs, EntryFn entry) const;
  const CpuLayout& layout() const { return layout_; }

 private:
  struct ArenaDeleter {
    size_t alignment = 64;
    void operator()(char* p) const;
  };
  using Arena = std::unique_ptr<char[], ArenaDeleter>;

  bool staged(const std::vector<Array>& inputs, const std::vector<Array>& outputs, size_t k) const;
  bool overlaps_any(const std::vector<Array>& inputs, const std::vector<Array>& outputs, size_t k) const;
  Arena take_arena() const;
  void give_arena(Arena a) const;

  CpuLayout layout_;
  mutable std::mutex mu_;
  mutable std::vector<Arena> free_;
};

}  // namespace fluxion::cpu
