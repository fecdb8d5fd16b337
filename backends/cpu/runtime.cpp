#include "backends/cpu/runtime.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <numbers>
#include <string>
#include <thread>

#include "fluxion/error.h"
#include "fluxion/runtime.h"
#include "jit/eval/philox.h"

namespace fluxion::cpu {
namespace {

// Chunks smaller than this much work are not worth a thread hand-off.
constexpr int64_t kMinChunkWork = int64_t{1} << 14;

int default_threads() {
  if (const char* v = std::getenv("FLUXION_NUM_THREADS"); v && std::atoi(v) > 0) return std::atoi(v);
  unsigned n = std::thread::hardware_concurrency();
  return n ? static_cast<int>(n) : 1;
}

// A fixed set of workers that run one parallel_for at a time. The calling thread takes chunks
// too; a second caller that finds the pool busy runs its loop alone instead of waiting.
class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      ++generation_;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  void run(KernelFn fn, void** bufs, int64_t n, int64_t chunks) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock() || workers_.empty()) {
      fn(bufs, 0, n);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = fn;
      bufs_ = bufs;
      n_ = n;
      chunks_ = chunks;
      next_ = 0;
      pending_ = chunks;
      ++generation_;
    }
    wake_.notify_all();
    take_chunks();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
  }

 private:
  void take_chunks() {
    for (;;) {
      int64_t c = next_.fetch_add(1);
      if (c >= chunks_) return;
      int64_t begin = n_ * c / chunks_, end = n_ * (c + 1) / chunks_;
      fn_(bufs_, begin, end);
      if (pending_.fetch_sub(1) == 1) {
        std::lock_guard<std::mutex> lock(mu_);
        done_.notify_all();
      }
    }
  }
  void work() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (stop_) return;
      }
      take_chunks();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex busy_, mu_;
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;
  bool stop_ = false;
  KernelFn fn_ = nullptr;
  void** bufs_ = nullptr;
  int64_t n_ = 0, chunks_ = 0;
  std::atomic<int64_t> next_{0}, pending_{0};
};

std::mutex pool_mu;
std::shared_ptr<Pool> pool_ptr;
std::atomic<int> thread_count{0};

std::shared_ptr<Pool> pool() {
  std::lock_guard<std::mutex> lock(pool_mu);
  if (!pool_ptr) pool_ptr = std::make_shared<Pool>(thread_count.load() > 0 ? thread_count.load() : default_threads());
  return pool_ptr;
}

extern "C" void fx_parallel_for(KernelFn fn, void** bufs, int64_t n, int64_t work_per_item) {
  parallel_for(fn, bufs, n, work_per_item);
}

// rng_uniform (kind 0: f32, 1: f64) and rng_normal (kind 2) element `index` for `key`: the
// recipes of docs/ir.md, as the interpreter computes them.
extern "C" double fx_rng(int32_t k0, int32_t k1, int64_t index, int32_t kind) {
  philox::Key key{static_cast<uint32_t>(k0), static_cast<uint32_t>(k1)};
  uint64_t i = static_cast<uint64_t>(index);
  philox::Counter w = philox::philox4x32_10({static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0, 0}, key);
  if (kind == 2) {
    double u1 = (static_cast<double>(w[0]) + 1.0) * 0x1p-32;
    double u2 = static_cast<double>(w[1]) * 0x1p-32;
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  }
  if (kind == 0) return static_cast<double>(w[0] >> 8) * 0x1p-24;
  return static_cast<double>(((static_cast<uint64_t>(w[0]) << 32) | w[1]) >> 11) * 0x1p-53;
}

extern "C" int32_t fx_rng_fold(int32_t k0, int32_t k1, int32_t data, int64_t which) {
  philox::Key key{static_cast<uint32_t>(k0), static_cast<uint32_t>(k1)};
  philox::Counter w = philox::philox4x32_10({static_cast<uint32_t>(data), 0, 1, 0}, key);
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

const std::vector<RuntimeSymbol>& runtime_symbols() {
  static const std::vector<RuntimeSymbol> symbols{
      {"fx_parallel_for", reinterpret_cast<void*>(&fx_parallel_for)},
      {"fx_profile_mark", reinterpret_cast<void*>(&fx_profile_mark)},
      {"fx_rng", reinterpret_cast<void*>(&fx_rng)},
      {"fx_rng_fold", reinterpret_cast<void*>(&fx_rng_fold)},
  };
  return symbols;
}

void parallel_for(KernelFn fn, void** bufs, int64_t n, int64_t work_per_item) {
  int threads = num_threads();
  int64_t by_work = std::max<int64_t>(1, n * std::max<int64_t>(1, work_per_item) / kMinChunkWork);
  int64_t chunks = std::min<int64_t>({n, static_cast<int64_t>(threads), by_work});
  if (chunks <= 1) {
    fn(bufs, 0, n);
    return;
  }
  pool()->run(fn, bufs, n, chunks);
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
