#include "launcher/job.hpp"

#include <cstdio>
#include <string>

#include "common/log.hpp"
#include "launcher/agent.hpp"
#include "launcher/failure_report.hpp"
#include "launcher/hang_watch.hpp"
#include "launcher/net.hpp"
#include "launcher/rendezvous.hpp"
#include "launcher/stream_pump.hpp"
#include "launcher/trace_merge.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {
void say(const std::string& text) { write_all(2, text.data(), text.size()); }

std::string program_name(const Options& o) {
  std::string s = o.program;
  if (o.module) s = "-m " + s;
  return s;
}
}  // namespace

int run_job(Options o) {
  SignalChannel signals;
  if (o.log_dir.empty() && (o.redirects.any() || o.tee.any())) {
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
    for (int attempt = 0;; ++attempt) {
      AttemptPlan plan = rdzv->next(attempt);
      SPMD_LOG(Info) << "spmdrun: attempt " << attempt << ": node " << plan.node_rank << " of "
                     << plan.table.nnodes() << ", ranks " << plan.table.first_rank(plan.node_rank)
                     << ".." << plan.table.first_rank(plan.node_rank) + plan.table.local_world_size(plan.node_rank) - 1
                     << " of " << plan.table.world_size();
      AttemptOutcome outcome;
      {
        HangWatch watch(o, plan);
        outcome = agent.run(plan, rdzv->stop_fd(), watch.fd());
        if (outcome.kind == AttemptOutcome::Kind::Hung) outcome.message = watch.summary();
      }
      Verdict verdict = rdzv->conclude(outcome, summarize_root_cause(host, outcome));
      if (verdict.ok) {
        rdzv->finish();
        return 0;
      }
      bool interrupted = outcome.kind == AttemptOutcome::Kind::Interrupted;
      if (!interrupted && !verdict.stop_job && attempt < o.max_restarts) {
        std::string why = verdict.local_root ? summarize_root_cause(host, outcome) : verdict.remote_cause;
        say("spmdrun: attempt " + std::to_string(attempt) + " failed (" + why + "); restarting (" +
            std::to_string(attempt + 1) + " of " + std::to_string(o.max_restarts) + " restarts)\n");
        continue;
      }
      bool have_report = !outcome.failures.empty() || interrupted ||
                         outcome.kind == AttemptOutcome::Kind::StartFailed ||
                         outcome.kind == AttemptOutcome::Kind::Hung;
      if (have_report) say(format_failure_report(program_name(o), host, outcome, attempt + 1));
      if (!verdict.local_root) {
        say("spmdrun: the job failed on another node: " + verdict.remote_cause +
            " (its spmdrun printed the report); this node's workers were stopped\n");
      } else if (!have_report) {
        say("spmdrun: the job failed: " + verdict.remote_cause + "; this node's workers were stopped\n");
      }
      rdzv->finish();
      if (interrupted) return outcome.exit_code;
      return verdict.local_root && outcome.exit_code != 0 ? outcome.exit_code
                                                          : (verdict.exit_code != 0 ? verdict.exit_code : 1);
    }
  } catch (const Interrupted& i) {
    say(std::string("spmdrun: interrupted by ") + signal_name(i.signal) + " during the rendezvous\n");
    return 128 + i.signal;
  }
}

}  // namespace spmd::launcher
