// MPI without mpirun. Open MPI 4.1 lets processes that it did not launch (spmdrun's workers,
// tcp:// worlds) initialise as "singletons", but two singletons can connect to each other
// (MPI_Comm_connect/accept) only through an ompi-server both know. So the first process of
// the job to need MPI starts one (`ompi-server --no-daemonize -r -`, a child it stops at exit)
// and publishes its address in the store; every process sets OMPI_MCA_pmix_server_uri to it
// before MPI_Init; a group's communicator is then grown one member at a time: rank 0 opens a
// port, and the members so far accept each next rank's connection (MPI_Intercomm_merge puts
// it last, so communicator ranks are group ranks).
#pragma once

#include "backends/backend.hpp"
#include "backends/mpi/mpi_api.hpp"
#include "backends/mpi/mpi_watchdog.hpp"

namespace spmd::mpi {

// Before MPI_Init in a process mpirun did not start: finds or starts the job's ompi-server.
void prepare_singleton(const BackendConfig& config);

// The group's communicator among singletons, through the store and the job's ompi-server.
Comm connect_singletons(Api& api, const BackendConfig& config, InFlight& inflight);

}  // namespace spmd::mpi
