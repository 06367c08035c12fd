// Topology: who this process is in the job, read from the environment a launcher left
// (spmdrun/torchrun, Slurm's srun, Open MPI's mpirun, PMI).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace spmd {

enum class LaunchSource { Torchrun, Slurm, OpenMPI, PMI, Single };
const char* launch_source_name(LaunchSource s);

struct Topology {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = 0;
  int nnodes = 1;
  // Where rank 0 hosts the store: MASTER_ADDR/MASTER_PORT; under Slurm without them, the
  // first host of the step's node list and slurm_master_port(SLURM_JOB_ID, SLURM_STEP_ID).
  std::string master_addr;  // empty when the environment names none
  int master_port = 0;      // 0 when the environment names none
  LaunchSource source = LaunchSource::Single;
  // The GPUs spmdrun gave this process (--gpus-per-proc K: SPMD_GPUS_PER_PROC), which it sees
  // as CUDA devices 0..K-1 (CUDA_VISIBLE_DEVICES); 0 when the launcher gave none of its own.
  // The nccl backend then uses device 0, the process's first.
  int gpus_per_process = 0;

  // Reads the environment. Precedence: torchrun/spmdrun variables (RANK + WORLD_SIZE), then
  // Open MPI, then Slurm, then PMI; none of them = a single process (rank 0 of 1).
  // Missing or inconsistent variables raise Error(InvalidArgument) naming the variable.
  static Topology from_env();
  // Same, from a given map of variables (for tests).
  static Topology from_env(const std::map<std::string, std::string>& env);
};

// The port a Slurm job's rank 0 (or spmdrun's node 0) listens on when MASTER_PORT is not
// given: 10000 + (job_id mod 1100) * 20 + step_id mod 20, the same on every node of the job,
// different for up to 20 steps of one job and below Linux's ephemeral port range.
int slurm_master_port(int64_t job_id, int64_t step_id);

// Expands a Slurm-style host list: "node[01-04,7],gpu3" -> node01 node02 node03 node04 node7
// gpu3. Zero padding of ranges is kept. Bad syntax raises Error(InvalidArgument).
std::vector<std::string> expand_hostlist(const std::string& list);

}  // namespace spmd
