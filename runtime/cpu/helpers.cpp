#include "runtime/cpu/helpers.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <future>
#include <limits>
#include <memory>
#include <mutex>
#include <numbers>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "fluxion/error.h"
#include "fluxion/runtime.h"
#include "runtime/collective.h"
#include "runtime/counters.h"
#include "runtime/debug_print.h"
#include "runtime/philox.h"
#include "support/round_up.h"
#include "support/settings.h"

namespace fluxion::cpu {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

// Chunks smaller than this much work are not worth a thread hand-off.
constexpr int64_t kMinChunkWork = int64_t{1} << 14;
// The most chunks one job is split into: the pool's job word holds the count in 20 bits.
constexpr int64_t kMaxChunks = (int64_t{1} << 20) - 1;

// Kept once found: parallel_for asks at every kernel launch.
int default_threads() {
  static const int threads = [] {
    if (std::optional<int64_t> n = support::whole_number(support::Setting::num_threads))
      return static_cast<int>(std::min<int64_t>(*n, std::numeric_limits<int>::max()));
    unsigned n = std::thread::hardware_concurrency();
    return n ? static_cast<int>(n) : 1;
  }();
  return threads;
}

// [0, n) as `chunks` consecutive ranges: whole grains where there are at least as many grains
// as ranges, single items otherwise.
struct Ranges {
  int64_t n = 0, chunks = 1, grain = 1;
  int64_t begin(int64_t i) const { return std::min(n, support::ceil_div(n, grain) * i / chunks * grain); }
};
Ranges ranges_of(int64_t n, int64_t chunks, int64_t grain) {
  return {n, chunks, grain > 1 && support::ceil_div(n, grain) >= chunks ? grain : 1};
}

// One kernel of a pool job: fn over `ranges`, range i with the buffers at bufs + i * stride.
struct Segment {
  KernelFn fn = nullptr;
  void** bufs = nullptr;
  int64_t stride = 0;
  Ranges ranges;
  void run_chunk(int64_t i) const { fn(bufs + i * stride, ranges.begin(i), ranges.begin(i + 1)); }
};

// Runs the segments' chunks on the calling thread, in order.
void run_serially(const Segment* segments, int64_t count) {
  for (int64_t s = 0; s < count; ++s) {
    for (int64_t i = 0; i < segments[s].ranges.chunks; ++i) segments[s].run_chunk(i);
  }
}

// How many chunks parallel_for cuts [0, n) into on `threads` threads.
int64_t chunk_count(int64_t n, int64_t work_per_item, int64_t grain, int threads) {
  int64_t grains = support::ceil_div(n, std::max<int64_t>(1, grain));
  int64_t by_work = std::max<int64_t>(1, n * std::max<int64_t>(1, work_per_item) / kMinChunkWork);
  return std::min<int64_t>({grains, static_cast<int64_t>(threads), by_work, kMaxChunks});
}

// Spins on an atomic for up to `budget` before giving up, so that a hand-off between kernels
// that follow each other closely costs no system call.
template <class Ready>
bool spin_until(Ready ready, std::chrono::nanoseconds budget) {
  auto start = std::chrono::steady_clock::now();
  for (int i = 1;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if (i % 64 == 0 && std::chrono::steady_clock::now() - start > budget) return ready();
  }
}

// How long a worker stays awake after a chunk, and how long a caller spins for the last chunk
// before sleeping: long enough to span the serial kernels between two parallel ones in a call,
// short enough to give a busy machine its cores back soon.
constexpr std::chrono::microseconds kWorkerSpin{100}, kCallerSpin{50};

// A fixed set of workers that run one job at a time: one kernel's chunks, or the chunks of
// several kernels run side by side (at most kMaxGroupKernels segments). The calling thread takes
// chunks too; a second caller that finds the pool busy runs its job alone instead of waiting.
//
// A job is published in one atomic word, claim_ = generation (24 bits) | chunks (20) | next
// chunk (20). A worker owns chunk i of generation g only by advancing that word from
// (g, c, i), so a worker still leaving the previous job can never take a chunk of the next one
// with stale fields, and the fields of job g are not rewritten before every chunk of g has
// finished (pending_). Workers spin for a while after a job before sleeping, so a call whose
// kernels follow each other finds them awake.
class Pool {
 public:
  explicit Pool(int threads) {
    // The generation each worker has seen is read here, before it runs: a job (or the stop)
    // published before a new thread first looks must still count as new to it.
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this, seen = generation(claim_.load())] { work(seen); });
  }
  ~Pool() {
    stop_ = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      claim_.store(pack(next_generation(), 0, 0));
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs every chunk of the `count` segments.
  void run(const Segment* segments, int64_t count) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock() || workers_.empty()) {
      run_serially(segments, count);
      return;
    }
    int64_t chunks = 0;
    for (int64_t s = 0; s < count; ++s) {
      segments_[static_cast<size_t>(s)] = segments[s];
      chunks += segments[s].ranges.chunks;
      ends_[static_cast<size_t>(s)] = chunks;
    }
    pending_.store(chunks);
    uint64_t g = next_generation();
    claim_.store(pack(g, static_cast<uint64_t>(chunks), 0));
    if (sleepers_.load() > 0) {
      std::lock_guard<std::mutex> lock(mu_);
      wake_.notify_all();
    }
    take_chunks(g);
    if (!spin_until([&] { return pending_.load() == 0; }, kCallerSpin)) {
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, [&] { return pending_.load() == 0; });
    }
  }

 private:
  static constexpr uint64_t kFieldBits = 20, kFieldMask = (uint64_t{1} << kFieldBits) - 1;
  static uint64_t pack(uint64_t generation, uint64_t chunks, uint64_t next) {
    return (generation << (2 * kFieldBits)) | (chunks << kFieldBits) | next;
  }
  static uint64_t generation(uint64_t claim) { return claim >> (2 * kFieldBits); }
  uint64_t next_generation() const {
    return (generation(claim_.load()) + 1) & ((uint64_t{1} << (64 - 2 * kFieldBits)) - 1);
  }

  void take_chunks(uint64_t g) {
    for (;;) {
      uint64_t claim = claim_.load();
      uint64_t chunks = (claim >> kFieldBits) & kFieldMask, c = claim & kFieldMask;
      if (generation(claim) != g || c >= chunks) return;
      if (!claim_.compare_exchange_weak(claim, claim + 1)) continue;
      int64_t i = static_cast<int64_t>(c);
      size_t s = 0;
      while (i >= ends_[s]) ++s;
      segments_[s].run_chunk(s == 0 ? i : i - ends_[s - 1]);
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mu_);
        done_.notify_all();
      }
    }
  }
  void work(uint64_t seen) {
    for (;;) {
      auto fresh = [&] { return generation(claim_.load()) != seen || stop_; };
      if (!spin_until(fresh, kWorkerSpin)) {
        std::unique_lock<std::mutex> lock(mu_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, fresh);
        sleepers_.fetch_sub(1);
      }
      if (stop_) return;
      seen = generation(claim_.load());
      take_chunks(seen);
    }
  }

  std::vector<std::thread> workers_;
  std::mutex busy_, mu_;
  std::condition_variable wake_, done_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> claim_{0};
  std::atomic<int64_t> pending_{0};
  std::atomic<int> sleepers_{0};
  // The published job; written by the caller only while no chunk of the previous job runs.
  std::array<Segment, kMaxGroupKernels> segments_;
  std::array<int64_t, kMaxGroupKernels> ends_{};  // the chunks of segments 0..s together
};

std::mutex pool_mu;
std::shared_ptr<Pool> pool_ptr;
std::atomic<int> thread_count{0};

std::shared_ptr<Pool> pool() {
  std::lock_guard<std::mutex> lock(pool_mu);
  if (!pool_ptr) pool_ptr = std::make_shared<Pool>(thread_count.load() > 0 ? thread_count.load() : default_threads());
  return pool_ptr;
}

extern "C" void fx_parallel_for(KernelFn fn, void** bufs, int64_t n, int64_t work_per_item, int64_t grain) {
  parallel_for(fn, bufs, n, work_per_item, grain);
}

extern "C" void fx_parallel_parts(KernelFn fn, void** parts, int64_t buffers, int64_t n, int64_t count, int64_t grain) {
  parallel_parts(fn, parts, buffers, n, count, grain);
}

extern "C" void fx_parallel_group(const GroupKernel* kernels, int64_t count) { parallel_group(kernels, count); }

thread_local std::exception_ptr collective_failure;

// The calling thread's program call's asynchronous collectives, by slot (program.cpp).
thread_local std::vector<std::future<void>> in_flight;

runtime::CollectiveCall call_of(int32_t op, int32_t dtype, int64_t count, int64_t ranks, int64_t root, int64_t position,
                                int64_t collectives) {
  return {static_cast<ir::Op>(op), static_cast<DType>(dtype), count, ranks, root, position, collectives};
}

// kOk, or kCollectiveFailed with what fn raised kept for the caller (take_collective_failure).
template <class Fn>
int32_t reported(const Fn& fn) {
  try {
    fn();
    return kOk;
  } catch (...) {
    collective_failure = std::current_exception();
    return kCollectiveFailed;
  }
}

// Never throws through generated code: a collective that could not be started is reported by
// its wait.
extern "C" void fx_collective_start(int32_t op, int32_t dtype, int64_t count, int64_t ranks, int64_t root,
                                    int64_t position, int64_t collectives, const void* in, void* out, int64_t slot) {
  try {
    if (in_flight.size() <= static_cast<size_t>(slot)) in_flight.resize(static_cast<size_t>(slot) + 1);
    in_flight[static_cast<size_t>(slot)] =
        runtime::start_collective(call_of(op, dtype, count, ranks, root, position, collectives), in, out);
  } catch (...) {
    collective_failure = std::current_exception();
  }
}

extern "C" int32_t fx_collective_wait(int64_t slot) {
  if (static_cast<size_t>(slot) >= in_flight.size() || !in_flight[static_cast<size_t>(slot)].valid()) {
    return kCollectiveFailed;  // its start failed, and left what it raised
  }
  runtime::WaitTimer timer;
  return reported([slot] { in_flight[static_cast<size_t>(slot)].get(); });
}

// After the collectives started before it, so that every collective of a process keeps its
// program's order.
extern "C" int32_t fx_collective(int32_t op, int32_t dtype, int64_t count, int64_t ranks, int64_t root,
                                 int64_t position, int64_t collectives, const void* in, void* out) {
  runtime::WaitTimer timer;
  return reported([&] {
    runtime::run_collective_in_order(call_of(op, dtype, count, ranks, root, position, collectives), in, out);
  });
}

// debug_print: `encoded` is the node's description (runtime::encode_print), operands[i] the
// address of operand i.
extern "C" int32_t fx_debug_print(const char* encoded, const void* const* operands) {
  return reported([&] { runtime::emit_print(runtime::format_print(runtime::decode_print(encoded), operands)); });
}

// rng_uniform (kind 0: f32, 1: f64) and rng_normal (kind 2) element `index` for `key`: the
// recipes of docs/ir.md, as the interpreter computes them.
extern "C" double fx_rng(int32_t k0, int32_t k1, int64_t index, int32_t kind) {
  runtime::philox::Key key{static_cast<uint32_t>(k0), static_cast<uint32_t>(k1)};
  uint64_t i = static_cast<uint64_t>(index);
  runtime::philox::Counter w =
      runtime::philox::philox4x32_10({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0, 0}, key);
  if (kind == 2) {
    double u1 = (static_cast<double>(w[0]) + 1.0) * 0x1p-32;
    double u2 = static_cast<double>(w[1]) * 0x1p-32;
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  }
  if (kind == 0) return static_cast<double>(w[0] >> 8) * 0x1p-24;
  return static_cast<double>(((static_cast<uint64_t>(w[0]) << 32) | w[1]) >> 11) * 0x1p-53;
}

extern "C" int32_t fx_rng_fold(int32_t k0, int32_t k1, int32_t data, int64_t which) {
  runtime::philox::Key key{static_cast<uint32_t>(k0), static_cast<uint32_t>(k1)};
  runtime::philox::Counter w = runtime::philox::philox4x32_10({static_cast<uint32_t>(data), 0, 1, 0}, key);
  return static_cast<int32_t>(w[static_cast<size_t>(which)]);
}

extern "C" void fx_profile_mark(int32_t kernel) {
  std::vector<ProfileMark>& marks = profile_marks();
  if (marks.size() >= kMaxProfileMarks) return;
  auto now = std::chrono::steady_clock::now().time_since_epoch();
  marks.push_back({kernel, std::chrono::duration_cast<std::chrono::nanoseconds>(now).count()});
}

}  // namespace

std::vector<ProfileMark>& profile_marks() {
  thread_local std::vector<ProfileMark> marks = [] {
    std::vector<ProfileMark> m;
    m.reserve(kMaxProfileMarks);
    return m;
  }();
  return marks;
}

std::exception_ptr take_collective_failure() { return std::exchange(collective_failure, nullptr); }

void finish_collectives() {
  for (std::future<void>& f : in_flight) {
    if (f.valid()) f.wait();
  }
  in_flight.clear();
}

const std::vector<RuntimeSymbol>& runtime_symbols() {
  static const std::vector<RuntimeSymbol> symbols{
      {"fx_parallel_for", reinterpret_cast<void*>(&fx_parallel_for)},
      {"fx_collective", reinterpret_cast<void*>(&fx_collective)},
      {"fx_collective_start", reinterpret_cast<void*>(&fx_collective_start)},
      {"fx_collective_wait", reinterpret_cast<void*>(&fx_collective_wait)},
      {"fx_parallel_parts", reinterpret_cast<void*>(&fx_parallel_parts)},
      {"fx_parallel_group", reinterpret_cast<void*>(&fx_parallel_group)},
      {"fx_profile_mark", reinterpret_cast<void*>(&fx_profile_mark)},
      {"fx_rng", reinterpret_cast<void*>(&fx_rng)},
      {"fx_rng_fold", reinterpret_cast<void*>(&fx_rng_fold)},
      {"fx_debug_print", reinterpret_cast<void*>(&fx_debug_print)},
  };
  return symbols;
}

void parallel_for(KernelFn fn, void** bufs, int64_t n, int64_t work_per_item, int64_t grain) {
  int64_t chunks = chunk_count(n, work_per_item, grain, num_threads());
  if (chunks <= 1) {
    fn(bufs, 0, n);
    return;
  }
  Segment job{fn, bufs, 0, ranges_of(n, chunks, grain)};
  pool()->run(&job, 1);
}

// On one thread the segments run here, in order, without looking up the pool (which locks).
void run_job(const Segment* segments, int64_t count, int threads) {
  if (threads == 1) {
    run_serially(segments, count);
  } else {
    pool()->run(segments, count);
  }
}

void parallel_parts(KernelFn fn, void** parts, int64_t buffers, int64_t n, int64_t count, int64_t grain) {
  Segment job{fn, parts, buffers, ranges_of(n, count, grain)};
  run_job(&job, 1, num_threads());
}

void parallel_group(const GroupKernel* kernels, int64_t count) {
  int threads = num_threads();
  std::array<Segment, kMaxGroupKernels> job;
  for (int64_t first = 0; first < count; first += kMaxGroupKernels) {
    int64_t batch = std::min(count - first, kMaxGroupKernels);
    for (int64_t k = 0; k < batch; ++k) {
      const GroupKernel& g = kernels[first + k];
      job[static_cast<size_t>(k)] = {g.fn, g.bufs, 0,
                                     ranges_of(g.n, chunk_count(g.n, g.work_per_item, g.grain, threads), g.grain)};
    }
    run_job(job.data(), batch, threads);
  }
}

}  // namespace fluxion::cpu

namespace fluxion {

void set_num_threads(int n) {
  if (n < 1) detail::fail("set_num_threads", "the thread count must be at least 1, got " + std::to_string(n));
  std::lock_guard<std::mutex> lock(cpu::pool_mu);
  cpu::thread_count = n;
  if (cpu::pool_ptr && cpu::pool_ptr->size() != n) cpu::pool_ptr.reset();
}

int num_threads() {
  int n = cpu::thread_count.load();
  return n > 0 ? n : cpu::default_threads();
}

}  // namespace fluxion
