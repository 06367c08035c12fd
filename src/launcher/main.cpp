// spmdrun: the per-node launcher (docs/launcher.md). torchrun's contract, natively.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/attempt_plan.hpp"
#include "launcher/gpu_layout.hpp"
#include "launcher/guard.hpp"
#include "launcher/head_node.hpp"
#include "launcher/job.hpp"
#include "launcher/options.hpp"
#include "launcher/program_check.hpp"
#include "launcher/rank_table.hpp"
#include "common/error_text.hpp"
#include "common/log.hpp"
#include "launcher/stream_pump.hpp"
#include "launcher/worker_output.hpp"
#include "spmd/error.hpp"
#include "spmd/version.hpp"

extern char** environ;

namespace {

using namespace spmd::launcher;

void say(const std::string& text) { write_all(2, text.data(), text.size()); }

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** p = environ; *p != nullptr; ++p) {
    std::string kv(*p);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

int dry_run(const Options& o) {
  std::vector<int> counts(static_cast<size_t>(o.max_nodes), o.nproc_per_node);
  RankTable table(counts);
  std::string text = dry_run_table(o, table);
  if (o.min_nodes != o.max_nodes)
    text += "(--nnodes " + std::to_string(o.min_nodes) + ":" + std::to_string(o.max_nodes) +
            ": shown for " + std::to_string(o.max_nodes) +
            " nodes; the c10d rendezvous assigns node ranks in join order)\n";
  // The table repeats this node's count on every node. Only a count each node makes for itself
  // can differ between nodes that run this same command (nodes given different numbers run
  // different commands, and a head node's hostfile slots are shown as commands, not a table).
  if (o.multi_node() && (o.nproc_spec == "gpu" || o.nproc_spec == "auto" || o.nproc_spec == "cpu"))
    text += "(--nproc-per-node " + o.nproc_spec + ": each node counts its own " +
            (o.nproc_spec == "cpu" ? "CPU cores" : o.nproc_spec == "gpu" ? "GPUs" : "GPUs (else CPU cores)") +
            ", shown here with this machine's " + std::to_string(o.nproc_per_node) +
            "; nodes with different counts: each node's first rank is the sum of the counts below it, "
            "exchanged at the rendezvous)\n";
  if (!o.program.empty()) {
    text += "command:";
    for (const auto& a : worker_command(o)) text += " " + a;
    text += "\n";
  }
  write_all(1, text.data(), text.size());
  return 0;
}

void set_omp_threads(const Options& o) {
  if (std::getenv("OMP_NUM_THREADS") != nullptr || o.nproc_per_node <= 1) return;
  // torchrun's banner, word for word (it logs it as a warning of torch.distributed.run).
  say("WARNING:spmdrun:\n*****************************************\n"
      "Setting OMP_NUM_THREADS environment variable for each process to be 1 in default, to "
      "avoid your system being overloaded, please further tune the variable for optimal "
      "performance in your application as needed. \n"
      "*****************************************\n");
  setenv("OMP_NUM_THREADS", "1", 1);
}

// The launcher proper: head-node mode or this node's part of the job.
int run_launcher(const Options& o) {
  try {
    if (!o.hostfile.empty()) return run_head_node(o);
    set_omp_threads(o);
    return run_job(o);
  } catch (const spmd::Error& e) {
    say("spmdrun: error: " + message_of(e) + "\n");
    return e.kind() == spmd::ErrorKind::InvalidArgument ? 2 : 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  ParseResult parsed;
  try {
    parsed = parse_options(args, environment());
  } catch (const spmd::Error& e) {
    say("spmdrun: error: " + message_of(e) + "\nTry 'spmdrun --help' for every flag.\n");
    return 2;
  }
  if (parsed.help) {
    std::string h = help_text();
    write_all(1, h.data(), h.size());
    return 0;
  }
  if (parsed.version) {
    std::string v = std::string("spmdrun (spmd) ") + SPMD_VERSION + "\n";
    write_all(1, v.data(), v.size());
    return 0;
  }
  Options& o = parsed.options;
  // The workers inherit SPMD_DEBUG; a value nobody reads would log nothing and say nothing.
  if (std::string bad = spmd::log::level_error(); !bad.empty()) {
    say("spmdrun: error: " + bad + "\n");
    return 2;
  }
  if (o.dry_run && o.hostfile.empty()) return dry_run(o);
  // A mistyped program or script: one line and 127 (126: found, but it cannot run) before
  // anything starts. Nodes of a multi-node job check after their rendezvous (agent.cpp), and a
  // head node leaves it to the hosts, where the program runs.
  if (o.hostfile.empty() && !o.multi_node())
    if (std::optional<ProgramProblem> problem = check_program(o)) {
      say("spmdrun: " + problem->message + "\n");
      return problem->exit_code;
    }
  if (std::string note = unused_gpus_note(o); !note.empty()) say("spmdrun: note: " + note + "\n");
  if (!o.hostfile.empty() && o.dry_run) return run_launcher(o);
  // The workers' error files need a directory even without --log-dir, -r or -t: a temporary
  // one, owned by the guard, so it is removed even when the launcher process is killed.
  std::optional<ScratchDir> scratch;
  if (o.hostfile.empty() && o.log_dir.empty() && !o.redirects.any() && !o.tee.any()) {
    try {
      scratch.emplace(default_log_dir(o.rdzv_id));
    } catch (const spmd::Error& e) {
      say("spmdrun: error: " + message_of(e) + "\n");
      return 1;
    }
    o.log_dir = scratch->path();
    o.scratch_log_dir = true;
  }
  // Everything that starts processes runs guarded: spmdrun's own pid stays a small watchdog
  // that stops whatever the job left if the launcher dies, and vice versa (guard.hpp).
  try {
    return run_guarded([&o] { return run_launcher(o); }, o.grace_period_s);
  } catch (const spmd::Error& e) {
    say("spmdrun: error: " + message_of(e) + "\n");
    return 1;
  }
}
