// The MPI engine of the communicator (support/communicator.h).
#pragma once

#include <memory>

#include "support/communicator.h"

namespace fluxion::distributed {

// MPI must be initialised. The communicator works on its own duplicate of MPI_COMM_WORLD, so
// the application's own MPI traffic never matches Fluxion's, and turns MPI errors into Error.
std::shared_ptr<support::Communicator> make_mpi_communicator();

}  // namespace fluxion::distributed
