// Jobs of several processes (ranks), on one machine or many, launched by MPI's `mpirun` or a
// cluster's `srun`: start-up and shutdown, the job's shape, and collectives on arrays held by
// the host. Part of the optional `fluxion::distributed` library (built when MPI is found);
// a program that does not link it does not depend on MPI.
//
//   fluxion::distributed::init();                 // once, from the main thread
//   int r = fluxion::distributed::rank(), n = fluxion::distributed::size();
//   fluxion::distributed::all_reduce(grads, fluxion::ReduceOp::Mean);
//
// Collectives are called by every rank, in the same order, one at a time (MPI runs with
// MPI_THREAD_SERIALIZED: compiled programs exchange on a communication thread of their own).
// Reductions add the ranks' values in rank order, so all ranks get the same bits, and a rerun
// on as many ranks repeats them.
#pragma once

#include <fluxion/array.h>
#include <fluxion/collectives.h>

#include <chrono>
#include <string>

namespace fluxion::distributed {

struct Options {
  // The watchdog: a collective that has not completed after this long (a rank crashed,
  // stopped, or runs another program) prints which rank waited on which exchange and aborts
  // the whole job (MPI_Abort) instead of hanging it. Zero: FLUXION_COLLECTIVE_TIMEOUT (seconds)
  // when set, else 300 s.
  std::chrono::milliseconds collective_timeout{0};
};

// Joins the job the launcher started (MPI_Init_thread; a program that initialised MPI itself
// keeps its MPI, which must provide MPI_THREAD_SERIALIZED or more), or a job of one rank when the
// process was started alone. Idempotent (a second call keeps the first options); also registers
// finalize() to run at exit. Raises Error when MPI cannot start or lacks the thread support
// Fluxion needs.
void init(const Options& options = {});
bool initialized();
// Leaves the job (MPI_Finalize, unless the program had initialised MPI itself before init):
// call it on every rank, after the last collective. Collectives afterwards raise Error; a job
// cannot be joined again in the same process.
void finalize();

// This process's rank in [0, size()) and the number of ranks (0 and 1 before init()).
int rank();
int size();
// The engine carrying the collectives: "mpi" after init(), "self" before.
std::string engine();
// Returns when every rank has called it.
void barrier();

// Every rank's x becomes the reduction of all ranks' x (same dtype and shape everywhere).
void all_reduce(Array& x, ReduceOp op = ReduceOp::Sum);
// Every rank's x, stacked along a new first axis in rank order: shape [size(), x.shape...].
Array all_gather(const Array& x);
// Every rank's x becomes root's x.
void broadcast(Array& x, int root = 0);
// The reduction of all ranks' x, cut along its first axis (whose length size() must divide)
// into size() parts: this rank's part, shape [x.shape[0] / size(), x.shape[1:]...].
Array reduce_scatter(const Array& x, ReduceOp op = ReduceOp::Sum);

}  // namespace fluxion::distributed
