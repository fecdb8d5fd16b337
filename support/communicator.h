// The communicator: how the ranks of a job exchange bytes. One is installed per process; until
// one is (fluxion::distributed::init, with MPI), the process is a job of one rank and every
// collective is a copy. An engine (MPI today; Gloo or NCCL could follow) implements the few
// primitives below; the collectives with a fixed reduction order are built on them here, the
// same for every engine.
#pragma once

#include <fluxion/collectives.h>
#include <fluxion/dtype.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fluxion::support {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "self" for the one-rank job, "mpi" for MPI.
  virtual std::string engine() const = 0;
  virtual void barrier() = 0;
  // Every rank's `bytes` bytes of `send`, in rank order, in `recv` (size() * bytes).
  virtual void all_gather(const void* send, void* recv, int64_t bytes) = 0;
  // Rank r's `send_bytes[d]` bytes at `send_offsets[d]` go to rank d, which receives them at
  // `recv_offsets[r]` (`recv_bytes[r]` of them).
  virtual void all_to_all(const void* send, const std::vector<int64_t>& send_bytes,
                          const std::vector<int64_t>& send_offsets, void* recv, const std::vector<int64_t>& recv_bytes,
                          const std::vector<int64_t>& recv_offsets) = 0;
  // Ranks' unequal parts: rank r's `bytes[r]` bytes land at `offsets[r]` of `recv` on every rank.
  virtual void all_gather_varying(const void* send, void* recv, const std::vector<int64_t>& bytes,
                                  const std::vector<int64_t>& offsets) = 0;
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
};

// What the calling thread's collective is, for messages (the watchdog's): set for the scope of
// a collective ("all_reduce of f32[1000]"), "" outside one.
class CollectiveLabel {
 public:
  explicit CollectiveLabel(std::string what);
  ~CollectiveLabel();
  CollectiveLabel(const CollectiveLabel&) = delete;
  CollectiveLabel& operator=(const CollectiveLabel&) = delete;
  static const std::string& current();

 private:
  std::string previous_;
};

// The installed communicator (a one-rank one until another is installed), held by the caller
// for as long as it uses it (another may be installed meanwhile).
std::shared_ptr<Communicator> communicator();
// Installs `c` for the whole process (nullptr: back to one rank).
void install_communicator(std::shared_ptr<Communicator> c);

// The collectives, with reductions in rank order. `count` elements of dtype t. Element ranges
// are cut into size() contiguous chunks of count / size() elements, the first count % size()
// chunks one longer; rank r reduces chunk r.
std::vector<int64_t> chunk_counts(int64_t count, int ranks);
// Every rank's `recv` becomes the reduction of all ranks' `send` (which may be `recv`: in place).
void all_reduce(Communicator& c, const void* send, void* recv, int64_t count, DType t, ReduceOp op);
// Rank r's chunk r of the reduction of all ranks' `send` (count elements) into `recv`.
void reduce_scatter(Communicator& c, const void* send, void* recv, int64_t count, DType t, ReduceOp op);

}  // namespace fluxion::support
