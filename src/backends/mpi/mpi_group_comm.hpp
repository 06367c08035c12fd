// A group's MPI communicator, its ranks the group's ranks.
#pragma once

#include "backends/backend.hpp"
#include "backends/mpi/mpi_runtime.hpp"
#include "backends/mpi/mpi_watchdog.hpp"

namespace spmd::mpi {

// Under mpirun: the members' MPI_COMM_WORLD ranks meet in the store, then
// MPI_Comm_create_group (collective over the members only: other ranks take no part). Without
// mpirun: singletons connected through the job's ompi-server (mpi_singletons.hpp).
Comm make_group_comm(Runtime& runtime, const BackendConfig& config, InFlight& inflight);

}  // namespace spmd::mpi
