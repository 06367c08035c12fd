#include "launcher/attempt_plan.hpp"

#include "launcher/gpu_layout.hpp"
#include "launcher/python_probe.hpp"

#include <cstdlib>
#include <map>
#include <set>

namespace spmd::launcher {

std::string AttemptPlan::store_prefix() const {
  return "spmd/" + run_id + "/" + std::to_string(round);
}

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool runs_python(const Options& o) { return o.module || o.run_path || (!o.no_python && ends_with(o.program, ".py")); }

std::string worker_python(const Options& o) { return runs_python(o) ? python_executable() : ""; }

bool torch_may_share_agent_store(const Options& o) {
  const char* no_shared_store = std::getenv("TORCH_DISABLE_SHARE_RDZV_TCP_STORE");
  if (no_shared_store != nullptr && std::string(no_shared_store) == "1") return false;
  if (!runs_python(o)) return true;
  // torch 2.x's env:// client of an agent store asks for libuv whatever USE_LIBUV says, and a
  // torch built without it (Debian 13's 2.6) refuses: with torch 2.x, rank 0 hosts torch's
  // store (a plain TCPStore, which every build has) unless USE_LIBUV=1 says this torch has
  // libuv. torch 1.13 always shares the agent store (its clients retry a refused connection
  // only after a second, so a store of rank 0's costs ~1 s at start-up).
  const char* libuv = std::getenv("USE_LIBUV");
  if (libuv != nullptr && std::string(libuv) == "1") return true;
  std::optional<int> major = torch_major_version(python_executable());
  return !major || *major < 2;
}

std::vector<std::string> worker_command(const Options& o, int local_rank) {
  std::vector<std::string> argv;
  if (runs_python(o)) {
    argv = {python_executable(), "-u"};
    if (o.run_path) {
      // torchrun runs the script with runpy.run_path inside its own interpreter; here it is
      // the worker's interpreter that does so.
      argv.push_back("-c");
      argv.push_back("import runpy, sys; sys.argv = sys.argv[1:]; "
                     "runpy.run_path(sys.argv[0], run_name='__main__')");
    } else if (o.module) {
      argv.push_back("-m");
    }
  }
  argv.push_back(o.program);
  // torch.distributed.launch without --use-env: scripts of that time read their local rank
  // from this argument (argparse's --local_rank; torch 2.x's launch spells it --local-rank).
  if (!o.local_rank_arg.empty())
    argv.push_back("--" + o.local_rank_arg + "=" + (local_rank >= 0 ? std::to_string(local_rank) : "<LOCAL_RANK>"));
  argv.insert(argv.end(), o.program_args.begin(), o.program_args.end());
  return argv;
}

const std::vector<std::pair<const char*, const char*>>& worker_defaults() {
  static const std::vector<std::pair<const char*, const char*>> defaults{
      // torchrun 1.13 gives NCCL_ASYNC_ERROR_HANDLING=1, torchrun 2.x the new name (torch 2.x
      // still reads the old one, with a deprecation warning; 1.13 reads only the old one).
      {"NCCL_ASYNC_ERROR_HANDLING", "1"},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
      // torch 2.4+ makes the TCPStores of env:// (rank 0's own), tcp:// and torchelastic with
      // libuv unless USE_LIBUV=0, and a torch built without libuv (Debian 13's 2.6) refuses to.
      // The plain TCPStore serves a job's start-up as well; torch 1.13 ignores the variable.
      {"USE_LIBUV", "0"},
  };
  return defaults;
}

const std::vector<std::string>& launch_variable_names() {
  static const std::vector<std::string> names{
      "LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE",
      "WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
      "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
      "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE", "NODE_RANK", "SPMD_STORE_ADDR",
      "SPMD_STORE_PORT", "SPMD_STORE_PREFIX", "SPMD_LOCAL_ADDR",
      "CUDA_VISIBLE_DEVICES", "SPMD_GPUS_PER_PROC"};  // these two with --gpus-per-proc
  return names;
}

std::vector<std::string> worker_environment(const Options& o, const AttemptPlan& plan,
                                            const RankEntry& e, char** base_environ,
                                            const std::string& error_file) {
  // torch's workers use the launcher's store (it speaks torch's TCPStore protocol too) instead
  // of starting their own, as under torchrun's static rendezvous: MASTER_ADDR/PORT point at it
  // and torch keys its rendezvous under /worker/attempt_<TORCHELASTIC_RESTART_COUNT>. Not with
  // c10d or etcd, whose membership rounds keep the restart count (as torchrun, torch's rank 0 then hosts
  // its own store at MASTER_PORT), nor with SPMD_STORE_TOKEN (torch's client cannot present it).
  // TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 is torchrun 2.x's switch for the same (rank 0 hosts
  // torch's store): needed where torch has no libuv, as torch 2.x's client of an agent store
  // asks for libuv whatever USE_LIBUV says (rendezvous.py passes it only to rank 0's store).
  const bool agent_store = !plan.store_addr.empty() && o.rdzv_backend == RdzvBackend::Static &&
                           std::getenv("SPMD_STORE_TOKEN") == nullptr && torch_may_share_agent_store(o);
  std::map<std::string, std::string> set{
      {"LOCAL_RANK", std::to_string(e.local_rank)},
      {"RANK", std::to_string(e.global_rank)},
      {"GROUP_RANK", std::to_string(plan.node_rank)},
      // One role per job: role ranks are the global ranks (torchrun does the same).
      {"ROLE_RANK", std::to_string(e.global_rank)},
      {"ROLE_NAME", o.role},
      {"LOCAL_WORLD_SIZE", std::to_string(e.local_world_size)},
      {"WORLD_SIZE", std::to_string(e.world_size)},
      {"GROUP_WORLD_SIZE", std::to_string(plan.table.nnodes())},
      {"ROLE_WORLD_SIZE", std::to_string(e.world_size)},
      {"MASTER_ADDR", agent_store ? plan.store_addr : plan.master_addr},
      {"MASTER_PORT", std::to_string(agent_store ? plan.store_port : plan.master_port)},
      {"TORCHELASTIC_RESTART_COUNT", std::to_string(plan.restart_count)},
      {"TORCHELASTIC_MAX_RESTARTS", std::to_string(o.max_restarts)},
      {"TORCHELASTIC_RUN_ID", plan.run_id},
      {"TORCHELASTIC_USE_AGENT_STORE", agent_store ? "True" : "False"},
      {"NODE_RANK", std::to_string(plan.node_rank)},
  };
  // torchrun's per-worker error file: a worker's @record writes its exception there. Without
  // one, a TORCHELASTIC_ERROR_FILE spmdrun inherited must not reach the workers (it is the
  // job's, which spmdrun writes).
  if (!error_file.empty()) set["TORCHELASTIC_ERROR_FILE"] = error_file;
  // --gpus-per-proc K: the worker's own K GPUs (local rank i: the node's [i*K, (i+1)*K)), so
  // its device 0 is its first. Without the flag the variable is left alone, as torchrun does.
  if (o.gpus_per_proc > 0) {
    set["CUDA_VISIBLE_DEVICES"] = worker_gpus(o, e.local_rank);
    set["SPMD_GPUS_PER_PROC"] = std::to_string(o.gpus_per_proc);
  }
  if (!plan.local_addr.empty()) set["SPMD_LOCAL_ADDR"] = plan.local_addr;
  if (!plan.store_addr.empty()) {
    set["SPMD_STORE_ADDR"] = plan.store_addr;
    set["SPMD_STORE_PORT"] = std::to_string(plan.store_port);
    set["SPMD_STORE_PREFIX"] = plan.store_prefix();
  }
  std::vector<std::string> env;
  std::set<std::string> inherited;
  for (char** p = base_environ; p != nullptr && *p != nullptr; ++p) {
    std::string kv(*p);
    std::string key = kv.substr(0, kv.find('='));
    inherited.insert(key);
    if (set.count(key) != 0 || key == "TORCHELASTIC_ERROR_FILE") continue;
    // A stale spmd store from an outer launch must not leak into this one.
    if (plan.store_addr.empty() && key.rfind("SPMD_STORE_", 0) == 0 && key != "SPMD_STORE_TOKEN")
      continue;
    env.push_back(std::move(kv));
  }
  for (const auto& [name, value] : worker_defaults())
    if (inherited.count(name) == 0) env.push_back(std::string(name) + "=" + value);
  for (auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

}  // namespace spmd::launcher
