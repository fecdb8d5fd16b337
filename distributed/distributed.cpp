// fluxion/distributed.h: joining and leaving an MPI job, and the host collectives on arrays.
#include <fluxion/distributed.h>
#include <fluxion/error.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "distributed/mpi_communicator.h"
#include "support/communication_thread.h"
#include "support/communicator.h"
#include "support/settings.h"

namespace fluxion::distributed {
namespace {

enum class State { Alone, Joined, Left };

std::mutex& state_mutex() {
  static std::mutex m;
  return m;
}
State& state() {
  static State s = State::Alone;
  return s;
}
// Whether init started MPI (and finalize therefore ends it): a program that initialised MPI
// itself keeps it.
bool& owns_mpi() {
  static bool owns = false;
  return owns;
}

std::shared_ptr<support::Communicator> joined(const char* op) {
  std::lock_guard<std::mutex> lock(state_mutex());
  if (state() == State::Left) detail::fail(op, "the job was left (distributed::finalize) before this collective");
  return support::communicator();
}

void at_exit() { finalize(); }

std::string describe(const Array& x) { return TensorType{x.dtype(), x.shape()}.str(); }

std::chrono::milliseconds collective_timeout(const Options& options) {
  if (options.collective_timeout.count() > 0) return options.collective_timeout;
  return std::chrono::milliseconds(std::llround(support::seconds(support::Setting::collective_timeout) * 1000));
}

// Every rank checks that all ranks passed the same dtype and shape (one small exchange), so a
// mismatch is an Error on every rank instead of a hang or garbage inside MPI.
void check_same_arrays(support::Communicator& c, const char* op, const Array& x) {
  constexpr size_t kMaxRank = 8;
  std::vector<int64_t> mine(2 + kMaxRank, -1), all(mine.size() * static_cast<size_t>(c.size()));
  mine[0] = static_cast<int64_t>(x.dtype());
  mine[1] = static_cast<int64_t>(x.shape().size());
  for (size_t d = 0; d < std::min(kMaxRank, x.shape().size()); ++d) mine[2 + d] = x.shape()[d];
  int64_t bytes = static_cast<int64_t>(mine.size() * sizeof(int64_t));
  c.all_gather(mine.data(), all.data(), bytes);
  std::string differ;
  for (int r = 0; r < c.size(); ++r) {
    if (!std::equal(mine.begin(), mine.end(), all.begin() + static_cast<long>(r * mine.size())))
      differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  }
  if (!differ.empty())
    detail::fail(op, "rank " + std::to_string(c.rank()) + " passed a " + describe(x) + " array and ranks " + differ +
                         " passed another dtype or shape; every rank must pass the same");
}

}  // namespace

void init(const Options& options) {
  std::lock_guard<std::mutex> lock(state_mutex());
  if (state() == State::Joined) return;
  if (state() == State::Left) detail::fail("distributed::init", "a job cannot be joined again after finalize");
  std::chrono::milliseconds timeout = collective_timeout(options);
  int already = 0, provided = 0;
  MPI_Initialized(&already);
  if (already) {
    MPI_Query_thread(&provided);
  } else if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    detail::fail("distributed::init", "MPI_Init_thread failed");
  }
  owns_mpi() = !already;
  // Compiled programs exchange on their communication thread, host collectives on the caller's:
  // MPI calls come from several threads, one at a time (the communicator serialises them).
  if (provided < MPI_THREAD_SERIALIZED)
    detail::fail("distributed::init",
                 "MPI provides thread level " + std::to_string(provided) + "; Fluxion needs MPI_THREAD_SERIALIZED");
  support::install_communicator(make_mpi_communicator(timeout));
  state() = State::Joined;
  // Registered after the communicator's slot exists, so that at exit it runs before the slot
  // is destroyed (exit handlers and static destructors run in reverse order of registration).
  if (!already) std::atexit(at_exit);
}

bool initialized() {
  std::lock_guard<std::mutex> lock(state_mutex());
  return state() == State::Joined;
}

void finalize() {
  std::lock_guard<std::mutex> lock(state_mutex());
  if (state() != State::Joined) return;
  support::install_communicator(nullptr);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owns_mpi() && !finalized) MPI_Finalize();
  state() = State::Left;
}

int rank() { return support::communicator()->rank(); }
int size() { return support::communicator()->size(); }
std::string engine() { return support::communicator()->engine(); }
// Host collectives run after the ones compiled programs started (support/communication_thread.h).
void barrier() {
  support::run_in_order([] {
    support::CollectiveLabel label("barrier");
    joined("barrier")->barrier();
  });
}

void all_reduce(Array& x, ReduceOp op) {
  std::shared_ptr<support::Communicator> held = joined("all_reduce");
  support::Communicator& c = *held;
  support::run_in_order([&] {
    support::CollectiveLabel label("all_reduce (" + std::string(reduce_op_name(op)) + ") of " + describe(x));
    check_same_arrays(c, "all_reduce", x);
    void* data = x.mutable_data();
    support::all_reduce(c, data, data, x.size(), x.dtype(), op);
  });
}

Array all_gather(const Array& x) {
  std::shared_ptr<support::Communicator> held = joined("all_gather");
  support::Communicator& c = *held;
  Shape shape{c.size()};
  shape.insert(shape.end(), x.shape().begin(), x.shape().end());
  Array out = Array::empty(x.dtype(), shape);
  support::run_in_order([&] {
    support::CollectiveLabel label("all_gather of " + describe(x));
    check_same_arrays(c, "all_gather", x);
    c.all_gather(x.data(), out.mutable_data(), x.size() * dtype_size(x.dtype()));
  });
  return out;
}

void broadcast(Array& x, int root) {
  std::shared_ptr<support::Communicator> held = joined("broadcast");
  support::Communicator& c = *held;
  support::run_in_order([&] {
    support::CollectiveLabel label("broadcast from rank " + std::to_string(root) + " of " + describe(x));
    check_same_arrays(c, "broadcast", x);
    c.broadcast(x.mutable_data(), x.size() * dtype_size(x.dtype()), root);
  });
}

Array reduce_scatter(const Array& x, ReduceOp op) {
  std::shared_ptr<support::Communicator> held = joined("reduce_scatter");
  support::Communicator& c = *held;
  Array out;
  support::run_in_order([&] {
    support::CollectiveLabel label("reduce_scatter (" + std::string(reduce_op_name(op)) + ") of " + describe(x));
    check_same_arrays(c, "reduce_scatter", x);
    if (x.shape().empty() || x.shape()[0] % c.size() != 0)
      detail::fail("reduce_scatter", "the first axis of a " + describe(x) + " array is not divisible by the job's " +
                                         std::to_string(c.size()) + " ranks");
    Shape shape = x.shape();
    shape[0] /= c.size();
    out = Array::empty(x.dtype(), shape);
    support::reduce_scatter(c, x.data(), out.mutable_data(), x.size(), x.dtype(), op);
  });
  return out;
}

}  // namespace fluxion::distributed
