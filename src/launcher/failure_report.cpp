#include "launcher/failure_report.hpp"

namespace spmd::launcher {

namespace {
const char* kRule = "============================================================\n";
const char* kThin = "------------------------------------------------------------\n";

std::string describe(const WorkerFailure& f, const std::string& host) {
  std::string s = "[" + std::to_string(f.global_rank) + "]:\n";
  s += "  time      : " + f.time + "\n";
  s += "  host      : " + host + " (node rank " + std::to_string(f.node_rank) + ")\n";
  s += "  rank      : " + std::to_string(f.global_rank) + " (local_rank: " + std::to_string(f.local_rank) + ")\n";
  s += "  pid       : " + std::to_string(f.pid) + "\n";
  if (f.status.signal != 0)
    s += "  exitcode  : " + std::to_string(f.status.code) + " (killed by " + f.status.describe() + ")\n";
  else
    s += "  exitcode  : " + std::to_string(f.status.code) + "\n";
  if (f.stderr_tail.empty()) {
    s += "  stderr    : <empty>\n";
  } else {
    s += "  stderr    : last " + std::to_string(f.stderr_tail.size()) + " line(s):\n";
    for (const auto& line : f.stderr_tail) s += "    | " + line + "\n";
  }
  return s;
}
}  // namespace

std::string format_failure_report(const std::string& program, const std::string& host,
                                  const AttemptOutcome& o, int attempts_made) {
  std::string s = kRule;
  s += program + " FAILED";
  if (attempts_made > 1) s += " (after " + std::to_string(attempts_made) + " attempts)";
  s += "\n";
  s += kThin;
  if (o.kind == AttemptOutcome::Kind::StartFailed) {
    s += "Could not start the workers: " + o.message + "\n";
  } else if (o.kind == AttemptOutcome::Kind::Hung) {
    s += "spmdrun stopped the job because it hung (report above): " + o.message + "\n";
  } else if (o.kind == AttemptOutcome::Kind::Interrupted) {
    s += std::string("spmdrun received ") + signal_name(o.signal) +
         " and stopped the workers (forwarded the signal, then SIGKILL after the grace period)\n";
  }
  if (!o.failures.empty()) {
    s += "Failures:\n";
    if (o.failures.size() == 1) s += "  <NO_OTHER_FAILURES>\n";
    for (size_t i = 1; i < o.failures.size(); ++i) s += describe(o.failures[i], host);
    s += kThin;
    s += "Root Cause (first observed failure):\n";
    s += describe(o.failures.front(), host);
  }
  if (!o.stopped_ranks.empty()) {
    s += kThin;
    s += "Stopped by spmdrun: rank";
    s += o.stopped_ranks.size() > 1 ? "s " : " ";
    for (size_t i = 0; i < o.stopped_ranks.size(); ++i)
      s += (i ? "," : "") + std::to_string(o.stopped_ranks[i]);
    s += "\n";
  }
  s += kRule;
  return s;
}

std::string summarize_root_cause(const std::string& host, const AttemptOutcome& o) {
  if (o.failures.empty()) {
    if (o.kind == AttemptOutcome::Kind::Interrupted)
      return std::string("spmdrun on ") + host + " received " + signal_name(o.signal);
    if (o.kind == AttemptOutcome::Kind::StartFailed) return "on " + host + ": " + o.message;
    if (o.kind == AttemptOutcome::Kind::Hung) return "the job hung (spmdrun on " + host + "): " + o.message;
    return "a node on " + host + " stopped";
  }
  const WorkerFailure& f = o.failures.front();
  return "rank " + std::to_string(f.global_rank) + " (node " + std::to_string(f.node_rank) +
         ", host " + host + ", pid " + std::to_string(f.pid) + ") ended with " + f.status.describe();
}

}  // namespace spmd::launcher
