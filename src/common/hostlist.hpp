// Slurm-style compressed lists: host lists ("node[01-04,7]") and task counts ("2(x3),1").
#pragma once

#include <string>
#include <vector>

#include "spmd/topology.hpp"

namespace spmd {

// Expands "2(x3),1" into {2, 2, 2, 1} (Slurm's SLURM_TASKS_PER_NODE). `name` is the variable
// the text came from, for the error message.
std::vector<int> expand_task_counts(const std::string& name, const std::string& list);

}  // namespace spmd
