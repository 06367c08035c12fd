// Rendezvous for jobs that mpirun, srun or a PMI launcher started without MASTER_ADDR and
// MASTER_PORT: on one node, the ranks meet in a FileStore named after their common parent
// process (the launcher's daemon), so `mpirun -np 4 ./prog` needs no configuration at all.
// The ranks must be direct children of that one process, as under mpirun, srun and hydra; a
// per-rank wrapper script in between needs MASTER_ADDR/MASTER_PORT instead.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "spmd/store.hpp"
#include "spmd/topology.hpp"

namespace spmd {

// The FileStore path for this job, or nullopt when the job is not launcherless-capable (not
// started by Open MPI/Slurm/PMI, or spread over several nodes).
std::optional<std::string> launcherless_store_path(const Topology& topo);

// Call once every rank has opened the store: the last rank to arrive unlinks the file (the
// ranks keep their descriptors), so a finished or crashed job leaves nothing in /tmp.
void release_launcherless_store(Store& store, const std::string& path, int world_size);

}  // namespace spmd
