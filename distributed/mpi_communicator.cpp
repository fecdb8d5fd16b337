// Communicator over MPI: byte exchanges on a duplicate of MPI_COMM_WORLD whose errors return
// (MPI_ERRORS_RETURN) and become Error naming the call and MPI's message. Every exchange is a
// non-blocking MPI call waited on under a deadline (the watchdog): one that a rank never joins
// (it crashed, stopped, or runs another program) ends the job instead of hanging it.
#include "distributed/mpi_communicator.h"

#include <fluxion/error.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fluxion::distributed {
namespace {

void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  detail::fail(call, std::string("MPI failed: ") + std::string(text, static_cast<size_t>(length)));
}

// MPI counts are ints: a larger exchange is refused rather than truncated.
int count_of(int64_t bytes, const char* call) {
  if (bytes < 0 || bytes > INT_MAX)
    detail::fail(
        call, std::to_string(bytes) + " bytes in one exchange; at most " + std::to_string(INT_MAX) + " are supported");
  return static_cast<int>(bytes);
}

std::vector<int> counts_of(const std::vector<int64_t>& bytes, const char* call) {
  std::vector<int> out;
  out.reserve(bytes.size());
  for (int64_t b : bytes) out.push_back(count_of(b, call));
  return out;
}

constexpr auto kSpin = std::chrono::milliseconds(1);
constexpr auto kMaxPause = std::chrono::microseconds(50);
// A rank waiting this long answers the watchdog's questions (below).
constexpr auto kAnswerAfter = std::chrono::milliseconds(500);
// How long a timed-out rank waits for the others' answers.
constexpr auto kRollCall = std::chrono::seconds(1);
constexpr int kQuestion = 1, kAnswer = 2;

class MpiCommunicator final : public support::Communicator {
 public:
  explicit MpiCommunicator(std::chrono::milliseconds timeout) : timeout_(timeout) {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    check(MPI_Comm_dup(MPI_COMM_WORLD, &watch_), "MPI_Comm_dup");
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      MPI_Comm_free(&watch_);
      MPI_Comm_free(&comm_);
    }
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string engine() const override { return "mpi"; }
  void barrier() override {
    std::lock_guard<std::mutex> lock(mu_);
    MPI_Request r;
    check(MPI_Ibarrier(comm_, &r), "MPI_Ibarrier");
    wait(r, "barrier");
  }

  void all_gather(const void* send, void* recv, int64_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    int n = count_of(bytes, "MPI_Iallgather");
    MPI_Request r;
    check(MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_, &r), "MPI_Iallgather");
    wait(r, "all-gather");
  }

  void all_to_all(const void* send, const std::vector<int64_t>& send_bytes, const std::vector<int64_t>& send_offsets,
                  void* recv, const std::vector<int64_t>& recv_bytes,
                  const std::vector<int64_t>& recv_offsets) override {
    std::lock_guard<std::mutex> lock(mu_);
    const char* call = "MPI_Ialltoallv";
    std::vector<int> sc = counts_of(send_bytes, call), so = counts_of(send_offsets, call),
                     rc = counts_of(recv_bytes, call), ro = counts_of(recv_offsets, call);
    MPI_Request r;
    check(MPI_Ialltoallv(send, sc.data(), so.data(), MPI_BYTE, recv, rc.data(), ro.data(), MPI_BYTE, comm_, &r), call);
    wait(r, "all-to-all (the first half of a reduction)");
  }

  void all_gather_varying(const void* send, void* recv, const std::vector<int64_t>& bytes,
                          const std::vector<int64_t>& offsets) override {
    std::lock_guard<std::mutex> lock(mu_);
    const char* call = "MPI_Iallgatherv";
    std::vector<int> counts = counts_of(bytes, call), displs = counts_of(offsets, call);
    MPI_Request r;
    check(MPI_Iallgatherv(send, counts[static_cast<size_t>(rank_)], MPI_BYTE, recv, counts.data(), displs.data(),
                          MPI_BYTE, comm_, &r),
          call);
    wait(r, "all-gather (the second half of a reduction)");
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (root < 0 || root >= size_)
      detail::fail("broadcast",
                   "root " + std::to_string(root) + " is not a rank of a job of " + std::to_string(size_) + " ranks");
    MPI_Request r;
    check(MPI_Ibcast(data, count_of(bytes, "MPI_Ibcast"), MPI_BYTE, root, comm_, &r), "MPI_Ibcast");
    wait(r, "broadcast");
  }

 private:
  // The watchdog's roll call, on a communicator of its own: a rank that has waited in a
  // collective for a while answers every question it finds; a rank whose collective timed out
  // asks every other rank and names those that do not answer within kRollCall (stopped,
  // crashed, or busy outside the collectives).
  void answer_questions() const {
    for (;;) {
      int found = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kQuestion, watch_, &found, &status);
      if (!found) return;
      int question = 0;
      MPI_Recv(&question, 1, MPI_INT, status.MPI_SOURCE, kQuestion, watch_, MPI_STATUS_IGNORE);
      MPI_Send(&rank_, 1, MPI_INT, status.MPI_SOURCE, kAnswer, watch_);
    }
  }

  std::string silent_ranks() const {
    std::vector<MPI_Request> asked;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      asked.emplace_back();
      MPI_Isend(&rank_, 1, MPI_INT, r, kQuestion, watch_, &asked.back());
    }
    std::vector<bool> answered(static_cast<size_t>(size_), false);
    answered[static_cast<size_t>(rank_)] = true;
    auto until = std::chrono::steady_clock::now() + kRollCall;
    while (std::chrono::steady_clock::now() < until && std::count(answered.begin(), answered.end(), false) > 0) {
      answer_questions();
      int found = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kAnswer, watch_, &found, &status);
      if (found) {
        int who = 0;
        MPI_Recv(&who, 1, MPI_INT, status.MPI_SOURCE, kAnswer, watch_, MPI_STATUS_IGNORE);
        answered[static_cast<size_t>(status.MPI_SOURCE)] = true;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
    std::string out;
    for (int r = 0; r < size_; ++r) {
      if (!answered[static_cast<size_t>(r)]) out += (out.empty() ? "" : ", ") + std::to_string(r);
    }
    return out;
  }

  // Polls the request: spinning for the first millisecond (the ranks of a step usually arrive
  // together), then sleeping between polls, at most kMaxPause: Open MPI moves a non-blocking
  // collective's fragments only inside MPI_Test, and with pauses of up to 1 ms a 16 MB
  // all-reduce took 15 ms instead of 4. Past the deadline the job is aborted: the other ranks
  // may be inside the same collective and would never return, so raising an Error here would
  // only move the hang elsewhere.
  void wait(MPI_Request& r, const char* what) const {
    using clock = std::chrono::steady_clock;
    auto start = clock::now();
    auto pause = std::chrono::microseconds(0);
    for (;;) {
      int done = 0;
      check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      auto waited = clock::now() - start;
      if (waited > kAnswerAfter) answer_questions();
      if (waited > timeout_) {
        const std::string& label = support::CollectiveLabel::current();
        std::string subject = label.empty() ? what : label + " (its " + what + ")";
        std::string silent = silent_ranks();
        std::string who = silent.empty() ? "every rank answered the roll call: one runs a different program"
                                         : "rank(s) " + silent +
                                               " did not answer the roll call: stopped, crashed, or busy outside the "
                                               "collectives";
        std::fprintf(stderr,
                     "fluxion: rank %d of %d: %s did not complete within %.3g s (the collective timeout); %s; "
                     "aborting the job\n",
                     rank_, size_, subject.c_str(), std::chrono::duration<double>(timeout_).count(), who.c_str());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
      if (waited > kSpin) {
        pause = std::min(kMaxPause, pause + std::chrono::microseconds(5));
        std::this_thread::sleep_for(pause);
      } else {
        std::this_thread::yield();
      }
    }
  }

  // MPI_THREAD_SERIALIZED: one MPI call at a time, whichever thread makes it.
  std::mutex mu_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm watch_ = MPI_COMM_NULL;  // the watchdog's roll call
  int rank_ = 0, size_ = 1;
  std::chrono::milliseconds timeout_;
};

}  // namespace

std::shared_ptr<support::Communicator> make_mpi_communicator(std::chrono::milliseconds timeout) {
  return std::make_shared<MpiCommunicator>(timeout);
}

}  // namespace fluxion::distributed
