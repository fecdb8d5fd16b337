#include "jit/compile_cache.h"

#include <future>
#include <map>
#include <mutex>

#include "runtime/counters.h"

namespace fluxion::driver {

ExecutablePtr cached_compile(const std::string& key, const std::function<ExecutablePtr()>& build) {
  static std::mutex mu;
  static std::map<std::string, std::shared_future<ExecutablePtr>> cache;
  std::promise<ExecutablePtr> promise;
  std::shared_future<ExecutablePtr> existing;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) {
      existing = it->second;
    } else {
      cache.emplace(key, promise.get_future().share());
    }
  }
  if (existing.valid()) {
    ExecutablePtr e = existing.get();  // waits while another thread compiles it
    runtime::counters().cache_hits++;
    return e;
  }
  try {
    ExecutablePtr e = build();
    promise.set_value(e);
    return e;
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard<std::mutex> lock(mu);
    cache.erase(key);
    throw;
  }
}

}  // namespace fluxion::driver
