#include "launcher/options.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <algorithm>
#include <functional>

#include "launcher/gpu_layout.hpp"
#include "launcher/hang_watch.hpp"
#include "launcher/slurm_step.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {

[[noreturn]] void usage_error(const std::string& message) {
  raise(ErrorKind::InvalidArgument, message);
}

int to_int(const std::string& flag, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  long x = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || errno != 0 || *end != '\0' || x < INT32_MIN || x > INT32_MAX)
    usage_error(flag + " " + v + ": not a whole number");
  return static_cast<int>(x);
}

double to_seconds(const std::string& flag, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || errno != 0 || *end != '\0' || !(x >= 0) || x > 1e7)
    usage_error(flag + " " + v + ": not a number of seconds (e.g. 5 or 0.1)");
  return x;
}

bool to_bool(const std::string& name, const std::string& v) {
  if (v == "1" || v == "true" || v == "True") return true;
  if (v == "0" || v == "false" || v == "False" || v.empty()) return false;
  usage_error(name + "=" + v + ": expected 0 or 1");
}

int cpu_count() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

// The text forms, kept until every flag is read, then checked together.
struct Raw {
  std::string nnodes;  // empty = not given: 1, or the srun step's node count
  std::string nproc_per_node = "1";
  std::string redirects = "0";
  std::string tee = "0";
  std::string rdzv_backend = "static";
  std::string rdzv_conf;
  std::string local_ranks_filter;
  std::string node_rank, master_port, max_restarts, monitor_interval, grace_period, gpus_per_proc;
  bool rdzv_id_given = false;
};

struct Flag {
  std::vector<std::string> names;  // every spelling, e.g. --nproc-per-node, --nproc_per_node
  std::string dest;                // torchrun's dest: PET_<DEST> is its environment default
  bool takes_value;
  std::function<void(Options&, Raw&, const std::string&)> apply;
  bool optional_value = false;  // --flag or --flag=VALUE (apply gets "" for the bare form)
};

// Both spellings of a long flag: --a-b and --a_b.
std::vector<std::string> spellings(const std::string& dest, std::vector<std::string> extra = {}) {
  std::string dashed = dest, underscored = dest;
  for (auto& c : dashed) c = c == '_' ? '-' : c;
  std::vector<std::string> names{"--" + dashed};
  if (underscored != dashed) names.push_back("--" + underscored);
  for (auto& e : extra) names.push_back(e);
  return names;
}

const std::vector<Flag>& flags() {
  static const std::vector<Flag> table = [] {
    std::vector<Flag> t;
    auto value = [&](const std::string& dest, std::vector<std::string> extra, auto fn) {
      t.push_back({spellings(dest, std::move(extra)), dest, true, fn});
    };
    auto toggle = [&](const std::string& dest, std::vector<std::string> extra, auto fn) {
      t.push_back({spellings(dest, std::move(extra)), dest, false, fn});
    };
    value("nnodes", {}, [](Options&, Raw& r, const std::string& v) { r.nnodes = v; });
    value("nproc_per_node", {}, [](Options&, Raw& r, const std::string& v) { r.nproc_per_node = v; });
    value("gpus_per_proc", {}, [](Options&, Raw& r, const std::string& v) { r.gpus_per_proc = v; });
    value("node_rank", {}, [](Options&, Raw& r, const std::string& v) { r.node_rank = v; });
    value("master_addr", {}, [](Options& o, Raw&, const std::string& v) {
      o.master_addr = v;
      o.master_addr_given = true;
    });
    value("master_port", {}, [](Options&, Raw& r, const std::string& v) { r.master_port = v; });
    toggle("standalone", {}, [](Options& o, Raw&, const std::string&) { o.standalone = true; });
    value("rdzv_backend", {}, [](Options&, Raw& r, const std::string& v) { r.rdzv_backend = v; });
    value("rdzv_endpoint", {}, [](Options& o, Raw&, const std::string& v) { o.rdzv_endpoint = v; });
    value("local_addr", {}, [](Options& o, Raw&, const std::string& v) { o.local_addr = v; });
    value("rdzv_id", {}, [](Options& o, Raw& r, const std::string& v) {
      o.rdzv_id = v;
      r.rdzv_id_given = true;
    });
    value("rdzv_conf", {}, [](Options&, Raw& r, const std::string& v) { r.rdzv_conf = v; });
    value("max_restarts", {}, [](Options&, Raw& r, const std::string& v) { r.max_restarts = v; });
    value("monitor_interval", {}, [](Options&, Raw& r, const std::string& v) { r.monitor_interval = v; });
    value("grace_period", {}, [](Options&, Raw& r, const std::string& v) { r.grace_period = v; });
    value("start_method", {}, [](Options&, Raw&, const std::string& v) {
      // Accepted for torchrun compatibility: workers are always new processes (fork + exec).
      if (v != "spawn" && v != "fork" && v != "forkserver")
        usage_error("--start-method " + v + ": expected spawn, fork or forkserver");
    });
    value("role", {}, [](Options& o, Raw&, const std::string& v) { o.role = v; });
    toggle("module", {"-m"}, [](Options& o, Raw&, const std::string&) { o.module = true; });
    toggle("no_python", {}, [](Options& o, Raw&, const std::string&) { o.no_python = true; });
    toggle("run_path", {}, [](Options& o, Raw&, const std::string&) { o.run_path = true; });
    // torch.distributed.launch's contract for scripts that read --local_rank (off by default,
    // as in torchrun); its --use-env ("do not append it") is accepted for commands moved over.
    t.push_back({spellings("local_rank_arg"), "local_rank_arg", false,
                 [](Options& o, Raw&, const std::string& v) {
                   if (v.empty() || v == "local_rank" || v == "local-rank") {
                     o.local_rank_arg = v.empty() ? "local_rank" : v;
                     return;
                   }
                   usage_error("--local-rank-arg=" + v + ": expected local_rank (--local_rank=N, torch 1.x's "
                               "torch.distributed.launch) or local-rank (--local-rank=N, torch 2.x's)");
                 },
                 true});
    toggle("use_env", {}, [](Options& o, Raw&, const std::string&) { o.use_env = true; });
    value("log_dir", {}, [](Options& o, Raw&, const std::string& v) { o.log_dir = v; });
    value("redirects", {"-r"}, [](Options&, Raw& r, const std::string& v) { r.redirects = v; });
    value("tee", {"-t"}, [](Options&, Raw& r, const std::string& v) { r.tee = v; });
    value("local_ranks_filter", {}, [](Options&, Raw& r, const std::string& v) { r.local_ranks_filter = v; });
    toggle("dry_run", {}, [](Options& o, Raw&, const std::string&) { o.dry_run = true; });
    value("hang_timeout", {}, [](Options& o, Raw&, const std::string& v) {
      o.hang_timeout_s = parse_duration("--hang-timeout", v);
    });
    value("trace", {}, [](Options& o, Raw&, const std::string& v) { o.trace_file = v; });
    value("hostfile", {}, [](Options& o, Raw&, const std::string& v) { o.hostfile = v; });
    value("rsh", {}, [](Options& o, Raw&, const std::string& v) { o.rsh = v; });
    return t;
  }();
  return table;
}

const Flag* find_flag(const std::string& name) {
  for (const auto& f : flags())
    for (const auto& n : f.names)
      if (n == name) return &f;
  return nullptr;
}

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

void parse_nnodes(Options& o, const std::string& v) {
  size_t colon = v.find(':');
  if (colon == std::string::npos) {
    o.min_nodes = o.max_nodes = to_int("--nnodes", v);
  } else {
    o.min_nodes = to_int("--nnodes", v.substr(0, colon));
    o.max_nodes = to_int("--nnodes", v.substr(colon + 1));
  }
  if (o.min_nodes < 1 || o.max_nodes < o.min_nodes || o.max_nodes > 65536)
    usage_error("--nnodes " + v + ": expected N or MIN:MAX with 1 <= MIN <= MAX");
}

// gpu and auto are resolved once every flag is known (resolve_gpus): they count GPUs, and
// only when they are asked for.
void parse_nproc(Options& o, const std::string& v) {
  o.nproc_spec = v;
  if (v == "gpu" || v == "auto") return;
  if (v == "cpu") {
    o.nproc_per_node = cpu_count();
    return;
  }
  o.nproc_per_node = to_int("--nproc-per-node", v);
  if (o.nproc_per_node < 1 || o.nproc_per_node > 4096)
    usage_error("--nproc-per-node " + v + ": expected a number of processes from 1 to 4096, "
                "gpu (one per GPU), cpu (one per CPU core) or auto (gpu when there are GPUs, else cpu)");
}

void parse_rdzv_conf(Options& o, const std::string& conf) {
  size_t pos = 0;
  while (pos < conf.size()) {
    size_t comma = conf.find(',', pos);
    std::string item = conf.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? conf.size() : comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos) usage_error("--rdzv-conf " + conf + ": '" + item + "' is not key=value");
    std::string key = item.substr(0, eq), val = item.substr(eq + 1);
    if (key == "join_timeout" || key == "timeout") o.join_timeout_s = to_seconds("join_timeout", val);
    else if (key == "last_call_timeout") o.last_call_timeout_s = to_seconds("last_call_timeout", val);
    else if (key == "peer_timeout") o.peer_timeout_s = std::max(0.2, to_seconds("peer_timeout", val));
    else if (key == "protocol" && val != "http")
      usage_error("--rdzv-conf protocol=" + val + ": spmdrun speaks plain http to etcd (TLS is not supported)");
    // Other torch keys (read_timeout, is_host, ...) are accepted and ignored.
  }
}

void parse_ranks_filter(Options& o, const std::string& v) {
  size_t pos = 0;
  while (pos < v.size()) {
    size_t comma = v.find(',', pos);
    std::string item = v.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? v.size() : comma + 1;
    if (item.empty()) continue;
    int r = to_int("--local-ranks-filter", item);
    if (r < 0) usage_error("--local-ranks-filter " + v + ": ranks are >= 0");
    o.local_ranks_filter.insert(r);
  }
}

// Under srun (one spmdrun per node), what the flags leave open comes from the step: nodes,
// node rank, node 0's host and a port derived from the job (see slurm_step.hpp).
void apply_slurm_step(Options& o, Raw& r, const std::map<std::string, std::string>& env) {
  if (o.standalone || !o.hostfile.empty()) return;
  auto step = slurm_step(env);
  if (!step || step->nnodes < 2) return;  // one node: free ports, as without Slurm
  if (step->tasks_on_node > 1 && r.nnodes.empty())
    usage_error("srun started " + std::to_string(step->tasks_on_node) + " tasks of spmdrun on node " +
                std::to_string(step->node_rank) + " of the step; spmdrun starts a node's processes itself: "
                "use srun --ntasks-per-node 1 and spmdrun --nproc-per-node N");
  if (r.nnodes.empty()) r.nnodes = std::to_string(step->nnodes);
  if (r.node_rank.empty()) r.node_rank = std::to_string(step->node_rank);
  if (!o.master_addr_given) {
    o.master_addr = step->first_host;
    o.master_addr_given = true;
  }
  if (r.master_port.empty()) r.master_port = std::to_string(step->port);
  if (!r.rdzv_id_given) o.rdzv_id = step->job_id;
}

// Checks the flags together, after PET_* defaults and the command line are both applied.
void finish(Options& o, Raw& r, const std::map<std::string, std::string>& env) {
  apply_slurm_step(o, r, env);
  parse_nnodes(o, r.nnodes.empty() ? "1" : r.nnodes);
  parse_nproc(o, r.nproc_per_node);
  if (!r.gpus_per_proc.empty()) {
    o.gpus_per_proc = to_int("--gpus-per-proc", r.gpus_per_proc);
    if (o.gpus_per_proc < 1 || o.gpus_per_proc > 1024)
      usage_error("--gpus-per-proc " + r.gpus_per_proc + ": expected a number of GPUs per process from 1 to 1024");
  }
  if (!r.node_rank.empty()) o.node_rank = to_int("--node-rank", r.node_rank);
  if (!r.master_port.empty()) {
    o.master_port = to_int("--master-port", r.master_port);
    o.master_port_given = true;
    if (o.master_port < 0 || o.master_port > 65535)
      usage_error("--master-port " + r.master_port + ": expected a port from 0 to 65535");
  }
  if (r.rdzv_backend == "static") o.rdzv_backend = RdzvBackend::Static;
  else if (r.rdzv_backend == "c10d") o.rdzv_backend = RdzvBackend::C10d;
  // torchrun's "etcd" and "etcd-v2" (etcd's v2 API); spmdrun speaks etcd's v3 API for both.
  else if (r.rdzv_backend == "etcd" || r.rdzv_backend == "etcd-v2") o.rdzv_backend = RdzvBackend::Etcd;
  else usage_error("--rdzv-backend " + r.rdzv_backend + ": spmdrun knows static, c10d and etcd");
  parse_rdzv_conf(o, r.rdzv_conf);
  if (!r.max_restarts.empty()) o.max_restarts = to_int("--max-restarts", r.max_restarts);
  if (o.max_restarts < 0) usage_error("--max-restarts " + r.max_restarts + ": expected >= 0");
  if (!r.monitor_interval.empty()) o.monitor_interval_s = to_seconds("--monitor-interval", r.monitor_interval);
  if (!r.grace_period.empty()) o.grace_period_s = to_seconds("--grace-period", r.grace_period);
  o.redirects = StdSpec::parse("--redirects", r.redirects);
  o.tee = StdSpec::parse("--tee", r.tee);
  parse_ranks_filter(o, r.local_ranks_filter);

  if (o.standalone) {
    if (o.max_nodes != 1) usage_error("--standalone runs one node; drop --nnodes or set it to 1");
    o.rdzv_backend = RdzvBackend::Static;  // one node needs no rendezvous: spmdrun hosts the store
    o.node_rank = 0;
  }
  if (!o.hostfile.empty()) {
    if (o.rsh.empty()) o.rsh = "ssh";
    if (o.program.empty() && !o.dry_run) usage_error("no program given: spmdrun [flags] PROGRAM [ARGS...]");
    return;  // the head starts one spmdrun per host; those check the rest
  }
  if (o.rdzv_backend == RdzvBackend::Static) {
    if (o.min_nodes != o.max_nodes)
      usage_error("--nnodes " + r.nnodes + ": a range needs --rdzv-backend c10d or etcd (the static "
                  "rendezvous has a fixed number of nodes)");
    if (o.node_rank < 0 || o.node_rank >= o.max_nodes)
      usage_error("--node-rank " + std::to_string(o.node_rank) + " is out of range for --nnodes " +
                  std::to_string(o.max_nodes) + ": node ranks are 0.." +
                  std::to_string(o.max_nodes - 1));
    if (o.multi_node() && !o.master_port_given && o.rdzv_endpoint.empty() && !o.dry_run)
      usage_error("--nnodes " + std::to_string(o.max_nodes) + " with the static rendezvous needs "
                  "--master-addr and --master-port (where node 0's spmdrun hosts the store)");
  } else if (o.rdzv_endpoint.empty() && !o.dry_run) {
    if (o.rdzv_backend == RdzvBackend::Etcd)
      usage_error("--rdzv-backend etcd needs --rdzv-endpoint HOST:PORT[,HOST:PORT...] (the client "
                  "endpoints of the etcd cluster, 2379 by default)");
    usage_error("--rdzv-backend c10d needs --rdzv-endpoint HOST:PORT (the first node to bind it "
                "hosts the store)");
  }
  if (o.module && o.no_python) usage_error("--module and --no-python exclude each other");
  if (o.use_env && !o.local_rank_arg.empty())
    usage_error("--use-env (torch.distributed.launch's: do not append --local_rank) and --local-rank-arg "
                "contradict each other; drop one");
  if (o.program.empty() && !o.dry_run)
    usage_error("no program given: spmdrun [flags] PROGRAM [ARGS...]");
  resolve_gpus(o, env);  // last: a command line that is wrong anyway loads no driver
}

}  // namespace

std::string closest_flag(const std::string& name) {
  // Edit distance counting a swap of two neighbours as one typo (optimal string alignment).
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  };
  std::vector<std::string> names{"--help", "--version"};
  for (const auto& f : flags()) names.insert(names.end(), f.names.begin(), f.names.end());
  // Close enough: a typo or two, more in long names; never for two-letter flags like -x.
  size_t allowed = std::max<size_t>(1, name.size() / 5);
  std::string best;
  size_t best_distance = allowed + 1;
  for (const auto& n : names) {
    if (n.size() < 4) continue;
    size_t d = distance(name, n);
    if (d < best_distance) {
      best = n;
      best_distance = d;
    }
  }
  return best;
}

ParseResult parse_options(const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env) {
  ParseResult result;
  Options& o = result.options;
  Raw raw;
  // torchrun's defaults from the environment first (PET_NPROC_PER_NODE=4, PET_STANDALONE=1).
  for (const auto& f : flags()) {
    auto it = env.find("PET_" + upper(f.dest));
    if (it == env.end()) continue;
    if (f.takes_value) f.apply(o, raw, it->second);
    else if (f.optional_value) {
      // PET_LOCAL_RANK_ARG=1 is the bare flag, =local-rank one with its value, =0 none.
      const std::string& v = it->second;
      if (v == "1" || v == "true" || v == "True") f.apply(o, raw, "");
      else if (v != "0" && v != "false" && v != "False" && !v.empty()) f.apply(o, raw, v);
    }
    else if (to_bool(it->first, it->second)) f.apply(o, raw, "");
  }
  size_t i = 1;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") {
      result.help = true;
      return result;
    }
    if (a == "--version") {
      result.version = true;
      return result;
    }
    if (a.size() < 2 || a[0] != '-') break;  // the program
    std::string name = a, value;
    bool inline_value = false;
    if (size_t eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    const Flag* f = find_flag(name);
    if (f == nullptr) {
      std::string guess = closest_flag(name);
      usage_error("unknown flag " + name + (guess.empty() ? "" : "; did you mean " + guess + "?"));
    }
    if (f->takes_value) {
      if (!inline_value) {
        if (i + 1 >= args.size()) usage_error(name + " needs a value");
        value = args[++i];
      }
      f->apply(o, raw, value);
    } else {
      if (inline_value && !f->optional_value) usage_error(name + " takes no value");
      f->apply(o, raw, value);
    }
  }
  o.launcher_args.assign(args.begin() + 1, args.begin() + static_cast<long>(std::min(i, args.size())));
  if (!o.launcher_args.empty() && o.launcher_args.back() == "--") o.launcher_args.pop_back();
  if (i < args.size()) {
    o.program = args[i];
    o.program_args.assign(args.begin() + static_cast<long>(i) + 1, args.end());
  }
  finish(o, raw, env);
  return result;
}

}  // namespace spmd::launcher
