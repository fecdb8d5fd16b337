// The order of a process's collectives: every rank must issue the same collectives in the same
// order, and MPI runs with MPI_THREAD_SERIALIZED (one call at a time). Compiled programs start
// theirs on the process's communication thread, which runs them one at a time in the order they
// were started; everything else that exchanges (host collectives, the interpreter, the
// trainer's checks) runs its whole exchange here too, after those started before it.
#pragma once

#include <functional>
#include <future>

namespace fluxion::support {

// Runs fn on the communication thread after everything started before it. The future rethrows
// what fn raised.
std::future<void> start_in_order(std::function<void()> fn);
// Runs fn after everything started before it and before anything started after it, on the
// calling thread (no hand-off when the communication thread is idle).
void run_in_order(const std::function<void()>& fn);

}  // namespace fluxion::support
