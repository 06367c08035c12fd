// Head-node mode: `spmdrun --hostfile hosts --rsh ssh ... PROGRAM` starts one per-node spmdrun
// on every host through the remote shell (static rendezvous: the first host, or
// --master-addr, hosts the store), passes their output through, and exits with the job's
// status. The remote spmdrun is this executable's path (SPMD_REMOTE_SPMDRUN overrides), run
// in the same working directory.
#pragma once

#include <string>
#include <vector>

#include "launcher/options.hpp"

namespace spmd::launcher {

// The remote-shell command line (argv) that starts node `node_rank`'s spmdrun.
std::vector<std::vector<std::string>> head_node_commands(const Options& options);

int run_head_node(const Options& options);

}  // namespace spmd::launcher
