#include "launcher/failure_report.hpp"

#include <vector>

namespace spmd::launcher {

namespace {
const char* kRule = "============================================================\n";
const char* kThin = "------------------------------------------------------------\n";
constexpr size_t kTracebackLines = 40;

// The lines of `text`, each "    | line"; only the last `max_lines`, after a "...", if longer.
std::string quoted_lines(const std::string& text, size_t max_lines) {
  std::vector<std::string> lines;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::string out;
  size_t first = lines.size() > max_lines ? lines.size() - max_lines : 0;
  if (first > 0) out += "    | ...\n";
  for (size_t i = first; i < lines.size(); ++i) out += "    | " + lines[i] + "\n";
  return out;
}

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
  if (f.lost_peer)
    s += "  note      : it failed because a peer was lost: a consequence of another failure\n";
  if (!f.hint.empty()) s += "  hint      : " + f.hint + "\n";
  if (f.error_file) {
    // What its @record wrote: the exception and its traceback, instead of the stderr tail.
    if (!f.error_file->path.empty()) s += "  error_file: " + f.error_file->path + "\n";
    s += "  error     : " + f.error_file->message + "\n";
    if (!f.error_file->traceback.empty()) s += "  traceback :\n" + quoted_lines(f.error_file->traceback, kTracebackLines);
  } else if (f.stderr_tail.empty()) {
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
    s += "spmdrun " + interruption_text(o.signal) +
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
  if (!o.leftovers.empty()) {
    s += kThin;
    s += "Still running after the workers ended, stopped by spmdrun:\n";
    for (const auto& p : o.leftovers) s += "  " + p + "\n";
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
      return "spmdrun on " + host + " " + interruption_text(o.signal);
    if (o.kind == AttemptOutcome::Kind::StartFailed) return "on " + host + ": " + o.message;
    if (o.kind == AttemptOutcome::Kind::Hung) return "the job hung (spmdrun on " + host + "): " + o.message;
    return "a node on " + host + " stopped";
  }
  const WorkerFailure& f = o.failures.front();
  return "rank " + std::to_string(f.global_rank) + " (node " + std::to_string(f.node_rank) +
         ", host " + host + ", pid " + std::to_string(f.pid) + ") ended with " + f.status.describe();
}

CauseNotice cause_notice(const std::string& host, const AttemptOutcome& o) {
  CauseNotice n;
  n.summary = summarize_root_cause(host, o);
  if (o.failures.empty()) return n;
  const WorkerFailure& root = o.failures.front();
  std::string tail;
  for (const auto& line : root.stderr_tail) tail += line + "\n";
  // torch's ProcessFailure.exitcode: the exit code, or -N for signal N.
  int code = root.status.signal != 0 ? -root.status.signal : root.status.code;
  n.error_json = to_json(job_error_document(root.error_file, code, n.summary, tail));
  return n;
}

}  // namespace spmd::launcher
