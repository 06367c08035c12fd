// The job on this node: rendezvous, run the attempt, agree on its end with the other nodes,
// restart the whole job up to --max-restarts times, print the failure report. Returns
// spmdrun's exit status.
#pragma once

#include "launcher/options.hpp"

namespace spmd::launcher {

int run_job(Options options);

}  // namespace spmd::launcher
