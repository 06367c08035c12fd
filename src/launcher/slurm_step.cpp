#include "launcher/slurm_step.hpp"

#include "common/hostlist.hpp"
#include "spmd/error.hpp"
#include "spmd/topology.hpp"

namespace spmd::launcher {

namespace {

int number(const std::map<std::string, std::string>& env, const std::string& name) {
  const std::string& v = env.at(name);
  size_t used = 0;
  long long x = -1;
  try {
    x = std::stoll(v, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != v.size() || x < 0 || x > 1'000'000'000)
    raise(ErrorKind::InvalidArgument, name + "=" + v + " is not a whole number (is this an srun step?)");
  return static_cast<int>(x);
}

}  // namespace

std::optional<SlurmStep> slurm_step(const std::map<std::string, std::string>& env) {
  // Only srun's tasks have a numeric step id and a step node count.
  for (const char* need : {"SLURM_STEP_ID", "SLURM_STEP_NUM_NODES", "SLURM_NODEID", "SLURM_JOB_ID"}) {
    auto it = env.find(need);
    if (it == env.end() || it->second.empty()) return std::nullopt;
  }
  if (env.at("SLURM_STEP_ID").find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  SlurmStep s;
  s.nnodes = number(env, "SLURM_STEP_NUM_NODES");
  s.node_rank = number(env, "SLURM_NODEID");
  if (s.nnodes < 1 || s.node_rank >= s.nnodes)
    raise(ErrorKind::InvalidArgument, "SLURM_NODEID=" + env.at("SLURM_NODEID") + " is not below SLURM_STEP_NUM_NODES=" +
                                          env.at("SLURM_STEP_NUM_NODES"));
  s.job_id = env.at("SLURM_JOB_ID");
  s.port = slurm_master_port(number(env, "SLURM_JOB_ID"), number(env, "SLURM_STEP_ID"));
  if (auto it = env.find("SLURM_STEP_NODELIST"); it != env.end() && !it->second.empty()) {
    auto hosts = expand_hostlist(it->second);
    if (!hosts.empty()) s.first_host = hosts.front();
  }
  if (s.first_host.empty()) raise(ErrorKind::InvalidArgument, "SLURM_STEP_NODELIST is not set in an srun step");
  if (auto it = env.find("SLURM_STEP_TASKS_PER_NODE"); it != env.end() && !it->second.empty()) {
    auto counts = expand_task_counts("SLURM_STEP_TASKS_PER_NODE", it->second);
    if (static_cast<size_t>(s.node_rank) < counts.size()) s.tasks_on_node = counts[static_cast<size_t>(s.node_rank)];
  }
  return s;
}

}  // namespace spmd::launcher
