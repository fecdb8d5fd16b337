#include "support/communication_thread.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace fluxion::support {
namespace {

// The communication thread: runs what it is handed one at a time, in order; run() runs on its
// caller's thread once the communication thread is idle.
class CommunicationThread {
 public:
  std::future<void> start(std::function<void()> fn) {
    std::packaged_task<void()> task(std::move(fn));
    std::future<void> done = task.get_future();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
      queue_.push_back(std::move(task));
    }
    wake_.notify_one();
    return done;
  }

  void run(const std::function<void()>& fn) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      idle_.wait(lock, [this] { return queue_.empty() && !busy_; });
      busy_ = true;
    }
    struct Done {
      CommunicationThread& t;
      ~Done() { t.finished(); }
    } done{*this};
    fn();
  }

  ~CommunicationThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void finished() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
    }
    idle_.notify_all();
    wake_.notify_one();
  }

  void loop() {
    for (;;) {
      std::packaged_task<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [this] { return (stop_ && queue_.empty()) || (!queue_.empty() && !busy_); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
        busy_ = true;
      }
      task();
      finished();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, idle_;
  std::deque<std::packaged_task<void()>> queue_;
  bool busy_ = false;  // a collective is running (on either thread)
  bool stop_ = false;
  std::thread thread_;
};

CommunicationThread& communication_thread() {
  static CommunicationThread thread;
  return thread;
}

}  // namespace

std::future<void> start_in_order(std::function<void()> fn) { return communication_thread().start(std::move(fn)); }

void run_in_order(const std::function<void()>& fn) { communication_thread().run(fn); }

}  // namespace fluxion::support
