// spmdrun's command line: torchrun's flags (both spellings), their PET_* environment
// defaults, and the checks that turn bad input into a clear message (exit status 2).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/std_streams.hpp"

namespace spmd::launcher {

// c10d and etcd are the elastic ones: nodes join in rounds, node ranks in join order.
enum class RdzvBackend { Static, C10d, Etcd };

struct Options {
  // Nodes and processes.
  int min_nodes = 1;
  int max_nodes = 1;
  int nproc_per_node = 1;
  std::string nproc_spec = "1";  // as given: a number, gpu, auto or cpu (head-node mode forwards it)
  int node_rank = 0;
  // GPUs (gpu_layout.hpp): --gpus-per-proc K (0 = not given) and this node's GPUs as workers
  // name them in CUDA_VISIBLE_DEVICES, known when gpu/auto or --gpus-per-proc counted them.
  int gpus_per_proc = 0;
  std::vector<std::string> node_gpus;
  bool nproc_from_gpus = false;  // gpu/auto found GPUs: nproc_per_node = their count / K
  bool gpus_assumed = false;     // --dry-run without enough GPUs here: node_gpus are 0..nproc*K-1
  std::string gpus_here;         // ... and what this machine has, for the table's footnote
  // Rendezvous.
  std::string master_addr = "127.0.0.1";
  bool master_addr_given = false;
  int master_port = 0;  // 0 = not given (single node: pick a free port)
  bool master_port_given = false;
  bool standalone = false;
  RdzvBackend rdzv_backend = RdzvBackend::Static;
  std::string rdzv_endpoint;  // host:port (c10d); host:port[,host:port...] (etcd's members)
  std::string rdzv_id = "none";
  // --local-addr: the address the other nodes reach this node at (MASTER_ADDR when it is node
  // 0, what its workers listen on); "" = learned from the rendezvous connections.
  std::string local_addr;
  double join_timeout_s = 600;      // --rdzv-conf join_timeout=...
  double last_call_timeout_s = 1;   // --rdzv-conf last_call_timeout=...
  double peer_timeout_s = 30;       // --rdzv-conf peer_timeout=... (multi-node heartbeats)
  // Workers.
  int max_restarts = 0;
  double monitor_interval_s = 5;
  double grace_period_s = 5;  // SIGTERM → SIGKILL during teardown
  std::string role = "default";
  bool no_python = false;
  bool module = false;
  bool run_path = false;
  // --local-rank-arg[=STYLE]: "local_rank" or "local-rank", the argument torch.distributed.launch
  // appended ("--local_rank=N"); "" = none (torchrun's way, and --use-env's).
  std::string local_rank_arg;
  bool use_env = false;
  // Output.
  std::string log_dir;
  bool scratch_log_dir = false;  // log_dir is spmdrun's own temporary one (error files only)
  StdSpec redirects;
  StdSpec tee;
  std::set<int> local_ranks_filter;  // empty = every rank
  // spmd extras.
  double hang_timeout_s = -1;  // --hang-timeout (-1: half of SPMD_TIMEOUT; 0: off): hang_watch.hpp
  std::string trace_file;      // --trace FILE.json: trace_merge.hpp
  bool dry_run = false;
  std::string hostfile;
  std::string rsh;
  // The program and its arguments.
  std::string program;
  std::vector<std::string> program_args;
  // spmdrun's own arguments before PROGRAM, as given (head-node mode forwards them).
  std::vector<std::string> launcher_args;

  bool multi_node() const { return max_nodes > 1; }
};

// What parse() found: options to run, or a request for help/version (already answered).
struct ParseResult {
  Options options;
  bool help = false;
  bool version = false;
};

// Parses argv (argv[0] is spmdrun itself) with PET_* defaults from `env`. Raises
// Error(InvalidArgument) with a message fit for the user on bad input.
ParseResult parse_options(const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env);

// The full --help text.
std::string help_text();

// The flag spelling closest to a mistyped one ("--nproc-per-nod" → "--nproc-per-node"), or ""
// when none is close enough to be what was meant.
std::string closest_flag(const std::string& name);

}  // namespace spmd::launcher
