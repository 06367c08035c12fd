#include "group/launcherless_store.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "common/env.hpp"
#include "common/log.hpp"

namespace spmd {

namespace {

// Field 22 of /proc/<pid>/stat: the process's start time in clock ticks since boot. With the
// pid it names one process for the life of the machine (pids are reused, start times not).
std::string start_time_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t close = stat.rfind(')');  // the command name may contain spaces and parentheses
  if (close == std::string::npos) return "0";
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
  }
  return field.empty() ? "0" : field;
}

std::string job_id(LaunchSource source) {
  switch (source) {
    case LaunchSource::OpenMPI:
      return env::get("OMPI_MCA_ess_base_jobid").value_or(env::get("OMPI_MCA_orte_ess_jobid").value_or("ompi"));
    case LaunchSource::Slurm:
      return env::get("SLURM_JOB_ID").value_or("slurm") + "." + env::get("SLURM_STEP_ID").value_or("0");
    case LaunchSource::PMI:
      return env::get("PMI_KVSNAME").value_or("pmi");
    default:
      return "";
  }
}

}  // namespace

std::optional<std::string> launcherless_store_path(const Topology& topo) {
  if (topo.source != LaunchSource::OpenMPI && topo.source != LaunchSource::Slurm && topo.source != LaunchSource::PMI)
    return std::nullopt;
  if (topo.nnodes != 1 || topo.local_world_size != topo.world_size) return std::nullopt;
  std::string id = job_id(topo.source);
  for (char& c : id)
    if (c == '/') c = '_';
  pid_t parent = ::getppid();
  std::string dir = env::get("TMPDIR").value_or("/tmp");
  return dir + "/spmd-" + launch_source_name(topo.source) + "-" + id + "-" + std::to_string(parent) + "-" +
         start_time_of(parent) + ".store";
}

void release_launcherless_store(Store& store, const std::string& path, int world_size) {
  if (store.add("spmd/launcherless/opened", 1) == world_size) {
    ::unlink(path.c_str());
    SPMD_LOG(Info) << "every rank opened " << path << "; unlinked it";
  }
}

}  // namespace spmd
