// A program compiled for the CPU: its schedule, its native code, and a pool of arenas so that
// concurrent calls do not share scratch memory and a steady-state call allocates nothing.
#include "backends/cpu/executable.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "backends/counters.h"
#include "backends/cpu/codegen.h"
#include "backends/cpu/native.h"
#include "backends/cpu/runtime.h"
#include "backends/profiler.h"
#include "codegen_version.h"
#include "fluxion/error.h"
#include "fluxion/profile.h"
#include "jit/eval/host_memory.h"

namespace fluxion::cpu {
namespace {

struct ArenaDeleter {
  void operator()(char* p) const { ::operator delete[](p, std::align_val_t(64)); }
};
using Arena = std::unique_ptr<char[], ArenaDeleter>;

class CpuExecutable final : public backends::Executable {
 public:
  explicit CpuExecutable(const ir::Program& p) : program_(p) {
    schedule_ = kernel::schedule(program_.body, true);
    code_ = build(false);
    size_t next = 0;
    kernel::for_each_kernel(program_.body, schedule_,
                            [&](kernel::Kernel& k) { k.strategy = code_->strategies.at(next++); });
    if (const char* dump = std::getenv("FLUXION_DUMP_IR"); dump && *dump && std::string(dump) != "0") {
      std::fprintf(stderr, "// ---- kernels\n%s\n", describe().c_str());
    }
    for (ir::ValueId v : program_.body.results) outputs_.push_back(program_.body.type(v));
  }

  std::vector<Array> run(const std::vector<Array>& inputs) const override {
    interp::check_host_memory(program_, interp::host_bytes(outputs_), arena_bytes());
    std::vector<Array> out = interp::allocate_results(program_, outputs_);
    run_into(inputs, out);
    return out;
  }

  void run_into(const std::vector<Array>& inputs, std::vector<Array>& outputs) const override {
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (output_slot(k) < 0 && overlaps_any(inputs, outputs, k)) {
        // A result the entry point copies out at its end (a passed-through input, a loop's
        // carry) cannot be staged: run into fresh buffers, then copy.
        std::vector<Array> fresh = run(inputs);
        for (size_t j = 0; j < outputs.size(); ++j) {
          std::memcpy(outputs[j].mutable_data(), fresh[j].data(), static_cast<size_t>(fresh[j].size() * dtype_size(fresh[j].dtype())));
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
    interp::check_host_memory(program_, 0, arena_bytes());
    Arena arena = take_arena();
    // An output buffer that overlaps an input or another output is written through its arena
    // slot and copied out after the call, so no input is read after being overwritten.
    for (size_t k = 0; k < outputs.size(); ++k) {
      io[ni + k] = staged(inputs, outputs, k) ? arena.get() + output_slot(k) : outputs[k].mutable_data();
    }
    int64_t launches = 0;
    const NativeCode* code = profiling() ? &profiled_code() : code_.get();
    if (code != code_.get()) profile_marks().clear();
    int32_t rc = code->entry(io, arena.get(), &launches);
    finish_collectives();
    if (code != code_.get()) report_marks();
    auto& c = backends::counters();
    c.program_calls++;
    c.native_calls++;
    c.kernel_launches += static_cast<uint64_t>(launches);
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (staged(inputs, outputs, k)) {
        std::memcpy(outputs[k].mutable_data(), arena.get() + output_slot(k),
                    static_cast<size_t>(outputs_[k].numel() * dtype_size(outputs_[k].dtype)));
      }
    }
    give_arena(std::move(arena));
    if (rc == kCollectiveFailed) std::rethrow_exception(take_collective_failure());
    if (rc >= kWhileMaxIters) {
      detail::fail("while", "the loop exceeded max_iters=" + std::to_string(rc - kWhileMaxIters) +
                                " (its condition was still true)");
    }
  }

  std::string describe() const override { return kernel::print(program_.body, schedule_); }
  std::string kernel_containing(const std::vector<size_t>& path) const override {
    return kernel::kernel_containing(program_.body, schedule_, path);
  }

 private:
  // Native code for the program; `profile`: with a timestamp before and after every kernel
  // (a separate compile, made on the first call that finds profiling on).
  std::unique_ptr<NativeCode> build(bool profile) const {
    Target target;
    target.vector_bytes = host().vector_bytes;
    target.matmul_vector_bytes = host().matmul_vector_bytes;
    target.vector_registers = host().vector_registers;
    target.profile = profile;
    std::string key = std::string("fluxion codegen " FLUXION_CODEGEN_HASH) + "\nvector " +
                      std::to_string(target.vector_bytes) + " " + std::to_string(target.matmul_vector_bytes) +
                      " registers " + std::to_string(target.vector_registers) + (profile ? " profiled" : "") +
                      (kernel::async_collectives_by_default() ? "" : " synchronous collectives") + "\n" +
                      ir::print(program_);
    auto code = build_native(key, [&](llvm::Module& m) { emit_program(program_, schedule_, target, m); });
    (code->from_disk_cache ? backends::counters().disk_cache_hits : backends::counters().compiles)++;
    return code;
  }

  const NativeCode& profiled_code() const {
    std::call_once(profiled_once_, [&] {
      kernel_names_ = kernel::kernel_lines(program_.body, schedule_);
      profiled_code_ = build(true);
    });
    return *profiled_code_;
  }

  // Pairs this thread's marks of the call just made (before, after) into timed kernels.
  void report_marks() const {
    const std::vector<ProfileMark>& marks = profile_marks();
    if (marks.empty()) return;
    thread_local std::vector<backends::TimedDispatch> dispatches;
    dispatches.clear();
    int64_t t0 = marks[0].ns;
    for (size_t i = 0; i + 1 < marks.size(); i += 2) {
      const std::string* name = &kernel_names_.at(static_cast<size_t>(marks[i].kernel));
      dispatches.push_back({name, static_cast<double>(marks[i].ns - t0) / 1e3, static_cast<double>(marks[i + 1].ns - marks[i].ns) / 1e3});
    }
    backends::report_profile(dispatches);
  }

  // Whether result k goes through its arena slot: it has one, and its buffer overlaps an input
  // or an earlier output.
  bool staged(const std::vector<Array>& inputs, const std::vector<Array>& outputs, size_t k) const {
    return output_slot(k) >= 0 && overlaps_any(inputs, outputs, k);
  }
  bool overlaps_any(const std::vector<Array>& inputs, const std::vector<Array>& outputs, size_t k) const {
    const char* p = static_cast<const char*>(outputs[k].data());
    int64_t bytes = outputs_[k].numel() * dtype_size(outputs_[k].dtype);
    for (const Array& in : inputs) {
      if (overlap(p, bytes, in)) return true;
    }
    for (size_t j = 0; j < k; ++j) {
      if (overlap(p, bytes, outputs[j])) return true;
    }
    return false;
  }

  static bool overlap(const char* p, int64_t bytes, const Array& a) {
    const char* q = static_cast<const char*>(a.data());
    int64_t qb = a.size() * dtype_size(a.dtype());
    return bytes > 0 && qb > 0 && p < q + qb && q < p + bytes;
  }

  // The arena offset planned for result k when it is written in place, else -1.
  int64_t output_slot(size_t k) const {
    ir::ValueId v = program_.body.results[k];
    size_t vi = static_cast<size_t>(v);
    return schedule_.storage[vi] == kernel::Storage::Output && schedule_.output_index[vi] == static_cast<int32_t>(k)
               ? schedule_.offset[vi]
               : -1;
  }

  Arena take_arena() const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        Arena a = std::move(free_.back());
        free_.pop_back();
        return a;
      }
    }
    int64_t bytes = arena_bytes();
    try {
      return Arena(static_cast<char*>(::operator new[](static_cast<size_t>(bytes), std::align_val_t(64))));
    } catch (const std::bad_alloc&) {
      interp::fail_allocation(program_, "the working memory (arena)", bytes);
    }
  }
  // The bytes of an arena (at least one cache line).
  int64_t arena_bytes() const { return std::max<int64_t>(schedule_.arena_bytes, 64); }
  void give_arena(Arena a) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.capacity() == free_.size()) return;  // keep the pool allocation-free
    free_.push_back(std::move(a));
  }

  ir::Program program_;
  kernel::RegionSchedule schedule_;
  std::unique_ptr<NativeCode> code_;
  mutable std::once_flag profiled_once_;
  mutable std::unique_ptr<NativeCode> profiled_code_;
  mutable std::vector<std::string> kernel_names_;  // by fx_profile_mark's kernel number
  std::vector<TensorType> outputs_;
  mutable std::mutex mu_;
  mutable std::vector<Arena> free_ = [] {
    std::vector<Arena> v;
    v.reserve(16);
    return v;
  }();
};

}  // namespace

std::unique_ptr<backends::Executable> compile(const ir::Program& p) { return std::make_unique<CpuExecutable>(p); }

}  // namespace fluxion::cpu
