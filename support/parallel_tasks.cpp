#include "support/parallel_tasks.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace fluxion::support {

int for_each_in_parallel(size_t n, int threads, const std::function<void(size_t)>& task) {
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mu;
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        task(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mu);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  size_t count = std::min(n, static_cast<size_t>(std::max(1, threads)));
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < count; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
  if (failure) std::rethrow_exception(failure);
  return static_cast<int>(std::max<size_t>(1, count));
}

}  // namespace fluxion::support
