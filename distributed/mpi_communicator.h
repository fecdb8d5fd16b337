// The MPI engine of the communicator (support/communicator.h).
#pragma once

#include <chrono>
#include <memory>

#include "support/communicator.h"

namespace fluxion::distributed {

// MPI must be initialised. The communicator works on its own duplicate of MPI_COMM_WORLD, so
// the application's own MPI traffic never matches Fluxion's, and turns MPI errors into Error.
// An exchange not complete after `timeout` aborts the job (MPI_Abort) with a message naming
// this rank and the exchange.
std::shared_ptr<support::Communicator> make_mpi_communicator(std::chrono::milliseconds timeout);

}  // namespace fluxion::distributed
