#include "launcher/job.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "common/log.hpp"
#include "launcher/agent.hpp"
#include "launcher/error_file.hpp"
#include "launcher/failure_report.hpp"
#include "launcher/guard.hpp"
#include "launcher/hang_watch.hpp"
#include "launcher/net.hpp"
#include "launcher/rendezvous/rendezvous.hpp"
#include "launcher/stream_pump.hpp"
#include "launcher/trace_merge.hpp"
#include "launcher/worker_output.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {
void say(const std::string& text) { write_all(2, text.data(), text.size()); }

// torchrun's agent copies the root cause's error file to its own TORCHELASTIC_ERROR_FILE;
// without one (a signal, a C++ worker), spmdrun writes one in the same format from the report.
void write_job_error_file(const std::string& path, const CauseNotice& cause, int exit_code) {
  std::string json = cause.error_json;
  if (json.empty()) json = to_json(job_error_document(std::nullopt, exit_code, cause.summary, ""));
  write_error_file(path, json);
}

std::string program_name(const Options& o) {
  std::string s = o.program;
  if (o.module) s = "-m " + s;
  return s;
}
}  // namespace

int run_job(Options o) {
  SignalChannel signals;
  // spmdrun's own TORCHELASTIC_ERROR_FILE (set by a scheduler, or an outer torchrun) is the
  // job's: it gets the root cause's error document when the job fails.
  const char* job_error_file = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (o.log_dir.empty()) {
    o.log_dir = default_log_dir(o.rdzv_id);
    say("spmdrun: worker logs go to " + o.log_dir + "\n");
  }
  TraceSession trace(o.trace_file);  // --trace: merges the ranks' traces when the job ends
  prepare_hang_watch(o);
  std::unique_ptr<Rendezvous> rdzv;
  NodeAgent agent(o, signals);
  std::string host = host_name();
  try {
    rdzv = make_rendezvous(o, signals);
    int restarts = 0;
    while (true) {
      AttemptPlan plan = rdzv->next(restarts);
      SPMD_LOG(Info) << "spmdrun: round " << plan.round << " (restart " << restarts << "): node " << plan.node_rank
                     << " of " << plan.table.nnodes() << ", ranks " << plan.table.first_rank(plan.node_rank) << ".."
                     << plan.table.first_rank(plan.node_rank) + plan.table.local_world_size(plan.node_rank) - 1
                     << " of " << plan.table.world_size();
      AttemptOutcome outcome;
      {
        HangWatch watch(o, plan);
        outcome = agent.run(
            plan, rdzv->stop_fd(),
            [&](const AttemptOutcome& local) { rdzv->announce_root_cause(local, cause_notice(host, local)); },
            watch.fd());
        if (outcome.kind == AttemptOutcome::Kind::Hung) outcome.message = watch.summary();
      }
      CauseNotice cause = cause_notice(host, outcome);
      Verdict verdict = rdzv->conclude(outcome, cause);
      bool interrupted = outcome.kind == AttemptOutcome::Kind::Interrupted;
      if (verdict.ok) {
        rdzv->acknowledge(false);
        rdzv->finish();
        return 0;
      }
      if (verdict.rejoin && !interrupted) {
        // A membership change (torchrun: num_nodes_waiting > 0): not a failure, no restart spent.
        rdzv->acknowledge(true);
        say("spmdrun: " + verdict.remote_cause + "; stopped this node's workers for a new rendezvous round "
            "(a membership change: not counted as a restart)\n");
        continue;
      }
      if (!interrupted && !verdict.stop_job && !verdict.rejoin && restarts < o.max_restarts) {
        rdzv->acknowledge(true);
        // A round this node's watcher failed (another node's heartbeat stood still) has its
        // cause in the verdict, not in this node's (stopped, not failed) workers.
        bool own_failure = verdict.local_root && outcome.kind != AttemptOutcome::Kind::StoppedByPeer;
        std::string why = own_failure ? summarize_root_cause(host, outcome) : verdict.remote_cause;
        ++restarts;
        say("spmdrun: round " + std::to_string(plan.round) + " failed (" + why + "); restarting (" +
            std::to_string(restarts) + " of " + std::to_string(o.max_restarts) + " restarts)\n");
        continue;
      }
      rdzv->acknowledge(false);
      bool have_report = !outcome.failures.empty() || interrupted ||
                         outcome.kind == AttemptOutcome::Kind::StartFailed ||
                         outcome.kind == AttemptOutcome::Kind::Hung;
      if (o.scratch_log_dir)  // the workers' error files go with it: no path to show
        for (auto& f : outcome.failures)
          if (f.error_file) f.error_file->path.clear();
      // A program that could not start, with no worker started: that one line says it all.
      bool one_line = outcome.kind == AttemptOutcome::Kind::StartFailed && outcome.failures.empty() &&
                      outcome.stopped_ranks.empty() && outcome.leftovers.empty();
      if (one_line)
        say("spmdrun: " + outcome.message +
            (restarts > 0 ? " (after " + std::to_string(restarts + 1) + " attempts)" : std::string()) + "\n");
      else if (have_report)
        say(format_failure_report(program_name(o), host, outcome, restarts + 1));
      if (!verdict.local_root && !one_line) {  // (a node that could not start either said why)
        say("spmdrun: the job failed on another node: " + verdict.remote_cause +
            " (its spmdrun printed the report); this node's workers were stopped\n");
      } else if (!have_report) {
        say("spmdrun: the job failed: " + verdict.remote_cause + "; this node's workers were stopped\n");
      }
      if (job_error_file != nullptr && *job_error_file != '\0')
        write_job_error_file(job_error_file, verdict.local_root ? cause : CauseNotice{verdict.remote_cause, verdict.error_json},
                             verdict.exit_code);
      // A node whose spmdrun was killed leaves; the others may go on without it.
      rdzv->finish(!(interrupted && outcome.signal == guard_lost_signal()));
      if (interrupted) return outcome.exit_code;
      return verdict.local_root && outcome.exit_code != 0 ? outcome.exit_code
                                                          : (verdict.exit_code != 0 ? verdict.exit_code : 1);
    }
  } catch (const Interrupted& i) {
    say("spmdrun: " + interruption_text(i.signal) + " during the rendezvous; stopped\n");
    return i.signal == guard_lost_signal() ? 128 + SIGKILL : 128 + i.signal;
  }
}

}  // namespace spmd::launcher
