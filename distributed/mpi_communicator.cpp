// Communicator over MPI: byte exchanges on a duplicate of MPI_COMM_WORLD whose errors return
// (MPI_ERRORS_RETURN) and become Error naming the call and MPI's message.
#include "distributed/mpi_communicator.h"

#include <fluxion/error.h>
#include <mpi.h>

#include <climits>
#include <string>
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

class MpiCommunicator final : public support::Communicator {
 public:
  MpiCommunicator() {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string engine() const override { return "mpi"; }
  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

  void all_gather(const void* send, void* recv, int64_t bytes) override {
    int n = count_of(bytes, "MPI_Allgather");
    check(MPI_Allgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm_), "MPI_Allgather");
  }

  void all_to_all(const void* send, const std::vector<int64_t>& send_bytes, const std::vector<int64_t>& send_offsets,
                  void* recv, const std::vector<int64_t>& recv_bytes,
                  const std::vector<int64_t>& recv_offsets) override {
    const char* call = "MPI_Alltoallv";
    std::vector<int> sc = counts_of(send_bytes, call), so = counts_of(send_offsets, call),
                     rc = counts_of(recv_bytes, call), ro = counts_of(recv_offsets, call);
    check(MPI_Alltoallv(send, sc.data(), so.data(), MPI_BYTE, recv, rc.data(), ro.data(), MPI_BYTE, comm_), call);
  }

  void all_gather_varying(const void* send, void* recv, const std::vector<int64_t>& bytes,
                          const std::vector<int64_t>& offsets) override {
    const char* call = "MPI_Allgatherv";
    std::vector<int> counts = counts_of(bytes, call), displs = counts_of(offsets, call);
    check(MPI_Allgatherv(send, counts[static_cast<size_t>(rank_)], MPI_BYTE, recv, counts.data(), displs.data(),
                         MPI_BYTE, comm_),
          call);
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    if (root < 0 || root >= size_)
      detail::fail("broadcast",
                   "root " + std::to_string(root) + " is not a rank of a job of " + std::to_string(size_) + " ranks");
    check(MPI_Bcast(data, count_of(bytes, "MPI_Bcast"), MPI_BYTE, root, comm_), "MPI_Bcast");
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace

std::shared_ptr<support::Communicator> make_mpi_communicator() { return std::make_shared<MpiCommunicator>(); }

}  // namespace fluxion::distributed
