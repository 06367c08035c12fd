// What one attempt of the job runs on this node: the rank table the rendezvous agreed on, the
// addresses workers meet at, and how each worker is started (its argv and environment, exactly
// torchrun's variables plus NODE_RANK and spmd's SPMD_STORE_*).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launcher/options.hpp"
#include "launcher/rank_table.hpp"

namespace spmd::launcher {

struct AttemptPlan {
  RankTable table{{1}};
  int node_rank = 0;
  std::string master_addr;  // MASTER_ADDR / MASTER_PORT: left for PyTorch's own TCPStore
  int master_port = 0;
  std::string local_addr;   // SPMD_LOCAL_ADDR: where this node's workers listen ("" = their choice)
  std::string store_addr;   // SPMD_STORE_ADDR / _PORT: the launcher's store ("" = none)
  int store_port = 0;
  std::string run_id;
  int restart_count = 0;    // restarts after failures (TORCHELASTIC_RESTART_COUNT)
  int round = 0;            // every start of the workers: restarts and membership changes
  std::string store_prefix() const;  // "spmd/<run_id>/<round>"
};

// The worker's command line: a .py program (or -m/--run-path) runs under Python — SPMD_PYTHON,
// else torchrun's PYTHON_EXEC, else the python3 beside spmdrun (a venv's), else python3 from
// PATH (python_probe.hpp) — with -u; anything else runs directly. With --local-rank-arg,
// "--local_rank=<local_rank>" (or "--local-rank=") follows the program, before its arguments,
// as torch.distributed.launch put it; local_rank -1 shows "<LOCAL_RANK>" there (--dry-run).
std::vector<std::string> worker_command(const Options& options, int local_rank = -1);
// Whether the program runs under Python (.py without --no-python, -m, --run-path).
bool runs_python(const Options& options);
// The Python that runs the workers ("" when the program is not run under Python).
std::string worker_python(const Options& options);
// Whether torch workers may use the launcher's store as their agent store
// (TORCHELASTIC_USE_AGENT_STORE=True): not with TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1, and not
// for torch 2.x unless USE_LIBUV=1 (its client of an agent store needs libuv).
bool torch_may_share_agent_store(const Options& options);

// The complete environment of one worker: the launcher's own environment with the launch
// variables set (replacing any inherited values), TORCHELASTIC_ERROR_FILE=error_file when one
// is given, and worker_defaults() that base_environ lacks.
std::vector<std::string> worker_environment(const Options& options, const AttemptPlan& plan,
                                            const RankEntry& entry, char** base_environ,
                                            const std::string& error_file = "");

// The names of every variable worker_environment sets (for docs and tests).
const std::vector<std::string>& launch_variable_names();

// The variables workers get when spmdrun's own environment lacks them (name, value): torchrun's
// NCCL_ASYNC_ERROR_HANDLING (1.13) and TORCH_NCCL_ASYNC_ERROR_HANDLING (2.x), and USE_LIBUV=0.
const std::vector<std::pair<const char*, const char*>>& worker_defaults();

}  // namespace spmd::launcher
