// Topology::from_env: who this process is, from whichever launcher started it.
//
// Sources, in order of precedence (the first whose rank variable is set wins):
//   torchrun/spmdrun  RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK|NODE_RANK,
//                     GROUP_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   Open MPI          OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}. Open MPI names no node
//                     index (OMPI_COMM_WORLD_NODE_RANK is a rank *within* the node), so with
//                     L = LOCAL_SIZE the node is rank / L and nnodes = ceil(size / L): exact
//                     for mpirun's default by-slot mapping with the same L on every node.
//   Slurm             SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NODEID, SLURM_NNODES
//                     (or SLURM_JOB_NUM_NODES), tasks per node from SLURM_STEP_TASKS_PER_NODE,
//                     SLURM_TASKS_PER_NODE ("2(x3),1") or SLURM_NTASKS_PER_NODE; the master
//                     is the first host of SLURM_STEP_NODELIST / SLURM_JOB_NODELIST unless
//                     MASTER_ADDR is set, and its port slurm_master_port(SLURM_JOB_ID,
//                     SLURM_STEP_ID) unless MASTER_PORT is set (every task computes the same).
//   PMI (MPICH/Hydra) PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS.
// MASTER_ADDR / MASTER_PORT are honoured with every source.
#include <unistd.h>

#include <optional>

#include "common/hostlist.hpp"
#include "spmd/error.hpp"
#include "spmd/topology.hpp"

extern char** environ;

namespace spmd {

const char* launch_source_name(LaunchSource s) {
  switch (s) {
    case LaunchSource::Torchrun: return "torchrun";
    case LaunchSource::Slurm: return "slurm";
    case LaunchSource::OpenMPI: return "openmpi";
    case LaunchSource::PMI: return "pmi";
    case LaunchSource::Single: return "single";
  }
  return "unknown";
}

namespace {

using Env = std::map<std::string, std::string>;

[[noreturn]] void invalid(const std::string& what) { raise(ErrorKind::InvalidArgument, what); }

class Vars {
 public:
  explicit Vars(const Env& env) : env_(env) {}

  bool has(const std::string& name) const {
    auto it = env_.find(name);
    return it != env_.end() && !it->second.empty();
  }
  std::string str(const std::string& name) const { return has(name) ? env_.at(name) : ""; }

  // A non-negative integer, or nullopt when unset.
  std::optional<int> num(const std::string& name) const {
    if (!has(name)) return std::nullopt;
    const std::string& v = env_.at(name);
    size_t used = 0;
    long long x = 0;
    try {
      x = std::stoll(v, &used, 10);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != v.size() || used == 0 || v.find_first_of(" \t+") != std::string::npos)
      invalid(name + "=" + v + " is not an integer; set it to a whole number (or unset it)");
    if (x < 0) invalid(name + "=" + v + " is negative; ranks and sizes start at 0");
    if (x > 1'000'000'000) invalid(name + "=" + v + " is too large");
    return static_cast<int>(x);
  }
  int need(const std::string& name, const std::string& because) const {
    auto v = num(name);
    if (!v) invalid(name + " is not set, but " + because + "; set it (or unset the others)");
    return *v;
  }
  // The first of several names that is set.
  std::optional<std::pair<std::string, int>> first(std::initializer_list<const char*> names) const {
    for (const char* n : names)
      if (auto v = num(n)) return std::make_pair(std::string(n), *v);
    return std::nullopt;
  }

 private:
  const Env& env_;
};

void require_size(const std::string& name, int v) {
  if (v < 1) invalid(name + "=" + std::to_string(v) + " must be at least 1");
}

void require_below(const std::string& a, int av, const std::string& b, int bv) {
  if (av >= bv)
    invalid(a + "=" + std::to_string(av) + " must be less than " + b + "=" + std::to_string(bv) +
            "; the launcher's variables are inconsistent");
}

// Fills node_rank/nnodes from rank and a uniform local world size when nothing names them.
void derive_nodes(Topology& t) {
  t.nnodes = (t.world_size + t.local_world_size - 1) / t.local_world_size;
  t.node_rank = t.rank / t.local_world_size;
}

void read_master(const Vars& v, Topology& t) {
  t.master_addr = v.str("MASTER_ADDR");
  if (auto p = v.num("MASTER_PORT")) {
    if (*p < 1 || *p > 65535)
      invalid("MASTER_PORT=" + std::to_string(*p) + " is not a TCP port; use 1-65535");
    t.master_port = *p;
  }
}

Topology from_torchrun(const Vars& v) {
  Topology t;
  t.source = LaunchSource::Torchrun;
  t.world_size = v.need("WORLD_SIZE", "RANK is set");
  t.rank = v.need("RANK", "WORLD_SIZE is set");
  require_size("WORLD_SIZE", t.world_size);
  require_below("RANK", t.rank, "WORLD_SIZE", t.world_size);
  auto nnodes = v.num("GROUP_WORLD_SIZE");
  if (nnodes) require_size("GROUP_WORLD_SIZE", *nnodes);
  if (auto l = v.num("LOCAL_WORLD_SIZE")) {
    t.local_world_size = *l;
    require_size("LOCAL_WORLD_SIZE", *l);
  } else if (nnodes && t.world_size % *nnodes == 0) {
    t.local_world_size = t.world_size / *nnodes;
  } else {
    t.local_world_size = t.world_size;  // nothing says otherwise: one node
  }
  if (t.local_world_size > t.world_size)
    invalid("LOCAL_WORLD_SIZE=" + std::to_string(t.local_world_size) + " exceeds WORLD_SIZE=" +
            std::to_string(t.world_size));
  t.local_rank = v.num("LOCAL_RANK").value_or(t.rank % t.local_world_size);
  require_below("LOCAL_RANK", t.local_rank, "LOCAL_WORLD_SIZE", t.local_world_size);
  derive_nodes(t);
  if (nnodes) t.nnodes = *nnodes;
  if (auto g = v.first({"GROUP_RANK", "NODE_RANK"})) {
    t.node_rank = g->second;
    require_below(g->first, t.node_rank, "GROUP_WORLD_SIZE", t.nnodes);
  } else {
    require_below("node rank (RANK / LOCAL_WORLD_SIZE)", t.node_rank, "GROUP_WORLD_SIZE", t.nnodes);
  }
  read_master(v, t);
  return t;
}

// The names an MPI launcher uses for rank, size, local rank and local size.
struct MpiNames {
  const char* rank;
  const char* size;
  const char* local_rank;
  const char* local_size;
};

// Open MPI and PMI (MPICH/Hydra) describe a rank the same way: rank/size, optional local
// rank/size (absent = one node), nodes derived from those.
Topology from_mpi_names(const Vars& v, LaunchSource source, const MpiNames& n) {
  Topology t;
  t.source = source;
  t.world_size = v.need(n.size, std::string(n.rank) + " is set");
  t.rank = *v.num(n.rank);
  require_size(n.size, t.world_size);
  require_below(n.rank, t.rank, n.size, t.world_size);
  t.local_world_size = v.num(n.local_size).value_or(t.world_size);
  require_size(n.local_size, t.local_world_size);
  t.local_rank = v.num(n.local_rank).value_or(t.rank % t.local_world_size);
  require_below(n.local_rank, t.local_rank, n.local_size, t.local_world_size);
  derive_nodes(t);
  read_master(v, t);
  return t;
}

Topology from_openmpi(const Vars& v) {
  return from_mpi_names(v, LaunchSource::OpenMPI,
                        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                         "OMPI_COMM_WORLD_LOCAL_SIZE"});
}

Topology from_slurm(const Vars& v) {
  Topology t;
  t.source = LaunchSource::Slurm;
  auto ntasks = v.first({"SLURM_NTASKS", "SLURM_NPROCS"});
  if (!ntasks) invalid("SLURM_NTASKS is not set, but SLURM_PROCID is; run under srun");
  t.world_size = ntasks->second;
  t.rank = *v.num("SLURM_PROCID");
  require_size(ntasks->first, t.world_size);
  require_below("SLURM_PROCID", t.rank, ntasks->first, t.world_size);
  auto nn = v.first({"SLURM_NNODES", "SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES"});
  t.nnodes = nn ? nn->second : 1;
  if (nn) require_size(nn->first, t.nnodes);
  t.node_rank = v.num("SLURM_NODEID").value_or(0);
  require_below("SLURM_NODEID", t.node_rank, nn ? nn->first : "SLURM_NNODES", t.nnodes);
  bool found = false;
  for (const char* name : {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
    if (!v.has(name)) continue;
    auto counts = expand_task_counts(name, v.str(name));
    if (static_cast<size_t>(t.node_rank) >= counts.size())
      invalid(std::string(name) + "=" + v.str(name) + " lists " + std::to_string(counts.size()) +
              " nodes, but SLURM_NODEID=" + std::to_string(t.node_rank));
    t.local_world_size = counts[static_cast<size_t>(t.node_rank)];
    found = true;
    break;
  }
  if (!found) {
    if (auto per = v.num("SLURM_NTASKS_PER_NODE")) {
      require_size("SLURM_NTASKS_PER_NODE", *per);
      t.local_world_size = *per;
    } else {
      t.local_world_size = (t.world_size + t.nnodes - 1) / t.nnodes;
    }
  }
  t.local_rank = v.num("SLURM_LOCALID").value_or(t.rank % t.local_world_size);
  require_below("SLURM_LOCALID", t.local_rank, "tasks on this node", t.local_world_size);
  read_master(v, t);
  if (t.master_addr.empty()) {
    for (const char* name : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
      if (!v.has(name)) continue;
      auto hosts = expand_hostlist(v.str(name));
      if (!hosts.empty()) t.master_addr = hosts.front();
      break;
    }
  }
  // Task 0 runs on the first node of the step, so every task can name the store's place.
  if (t.master_port == 0 && v.has("SLURM_JOB_ID")) {
    auto job = v.num("SLURM_JOB_ID");
    // SLURM_STEP_ID is a number in srun's tasks ("batch"/"extern" steps run no tasks of ours).
    auto step = v.str("SLURM_STEP_ID").find_first_not_of("0123456789") == std::string::npos ? v.num("SLURM_STEP_ID")
                                                                                              : std::nullopt;
    t.master_port = slurm_master_port(*job, step.value_or(0));
  }
  return t;
}

Topology from_pmi(const Vars& v) {
  return from_mpi_names(v, LaunchSource::PMI, {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"});
}

}  // namespace

int slurm_master_port(int64_t job_id, int64_t step_id) {
  // 10000-31999: below Linux's ephemeral range (32768-60999), where an outgoing connection
  // could already hold the port; 20 steps of a job get different ports.
  return static_cast<int>(10000 + (job_id % 1100) * 20 + step_id % 20);
}

namespace {
Topology ranks_from(const Vars& v) {
  if (v.has("RANK") || v.has("WORLD_SIZE")) return from_torchrun(v);
  if (v.has("OMPI_COMM_WORLD_RANK")) return from_openmpi(v);
  if (v.has("SLURM_PROCID")) return from_slurm(v);
  if (v.has("PMI_RANK")) return from_pmi(v);
  Topology t;
  read_master(v, t);
  return t;
}
}  // namespace

Topology Topology::from_env(const std::map<std::string, std::string>& env) {
  Vars v(env);
  Topology t = ranks_from(v);
  t.gpus_per_process = v.num("SPMD_GPUS_PER_PROC").value_or(0);
  return t;
}

Topology Topology::from_env() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return from_env(env);
}

}  // namespace spmd
