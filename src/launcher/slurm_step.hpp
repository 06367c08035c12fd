// spmdrun started by srun (one task per node): the node count, this node's rank and the
// rendezvous point come from Slurm's step variables, so
//   srun --nodes 3 --ntasks-per-node 1 spmdrun --nproc-per-node 2 ./train
// needs no --nnodes, --node-rank, --master-addr or --master-port. Flags still win.
#pragma once

#include <map>
#include <optional>
#include <string>

namespace spmd::launcher {

struct SlurmStep {
  int nnodes = 1;           // SLURM_STEP_NUM_NODES
  int node_rank = 0;        // SLURM_NODEID
  int tasks_on_node = 1;    // srun tasks on this node (SLURM_STEP_TASKS_PER_NODE)
  std::string first_host;   // the first host of SLURM_STEP_NODELIST: node 0, the store's host
  int port = 0;             // slurm_master_port(SLURM_JOB_ID, SLURM_STEP_ID)
  std::string job_id;       // SLURM_JOB_ID: the default --rdzv-id
};

// The step this process is a task of, or nullopt outside an srun step (the batch script of
// sbatch has SLURM_JOB_* but no step of its own: spmdrun there is a one-node launcher, as
// before). Malformed variables raise Error(InvalidArgument) naming them.
std::optional<SlurmStep> slurm_step(const std::map<std::string, std::string>& env);

}  // namespace spmd::launcher
