// Making a group's communicator (mpi_group_comm.hpp).
#include "backends/mpi/mpi_group_comm.hpp"

#include <algorithm>

#include "backends/mpi/mpi_singletons.hpp"
#include "common/env.hpp"

namespace spmd::mpi {

Comm make_group_comm(Runtime& runtime, const BackendConfig& c, InFlight& inflight) {
  Api& api = runtime.api();
  if (!runtime.under_mpirun()) return connect_singletons(api, c, inflight);
  const std::string what = "group " + c.prefix + " (mpi backend)";
  const size_t n = c.globals.size();
  // spmd's ranks need not be MPI's (init() may be given others): map them through the store.
  const std::string key = c.prefix + "/mpi/world_rank/";
  c.store->set(key + std::to_string(c.rank), std::to_string(api.world_rank()));
  std::vector<std::string> keys;
  for (size_t r = 0; r < n; ++r) keys.push_back(key + std::to_string(r));
  std::vector<int> world_ranks;
  for (const Bytes& b : c.store->multi_get(keys, c.timeout))
    world_ranks.push_back(static_cast<int>(env::parse_int("MPI rank", to_string(b))));
  for (size_t r = 0; r < n; ++r)
    for (size_t q = 0; q < r; ++q)
      if (world_ranks[r] == world_ranks[q])
        raise(ErrorKind::InvalidArgument,
              what + ": global ranks " + std::to_string(c.globals[q]) + " and " + std::to_string(c.globals[r]) +
                  " are both rank " + std::to_string(world_ranks[r]) +
                  " of MPI_COMM_WORLD: they were not started by one mpirun. Start every process of the job with one "
                  "mpirun, or use the native backend");
  const int tag = static_cast<int>(hash_name(c.prefix) % static_cast<uint32_t>(std::min(api.tag_upper_bound(), 32767)));
  inflight.begin_step("creating the group's MPI communicator (MPI_Comm_create_group)", Deadline(c.timeout));
  Comm comm = nullptr;
  int rc = api.comm_of_world(world_ranks, tag, &comm);
  inflight.end();
  if (rc != 0)
    raise(api.error_kind(rc), what + ": MPI_Comm_create_group over MPI_COMM_WORLD ranks failed: " + api.error_text(rc));
  return comm;
}

}  // namespace spmd::mpi
