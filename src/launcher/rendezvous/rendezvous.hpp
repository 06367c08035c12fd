// Rendezvous: how the nodes of a job agree on the rank table and the meeting addresses for
// each attempt, and on how the attempt ended (one node's failure stops and restarts them all).
//   local  — one node: no agreement needed; spmdrun hosts the store on a free port.
//   static — fixed nodes and node ranks; node 0 hosts the store at --master-addr:--master-port.
//   c10d   — nodes join at --rdzv-endpoint; node ranks are assigned in join order.
#pragma once

#include <memory>
#include <string>

#include "launcher/agent.hpp"
#include "launcher/attempt_plan.hpp"
#include "launcher/failure_report.hpp"
#include "launcher/options.hpp"
#include "launcher/signals.hpp"

namespace spmd::launcher {

// The job-wide end of an attempt.
struct Verdict {
  bool ok = true;
  int exit_code = 0;
  bool local_root = true;    // the failure happened on this node (this node prints the report)
  bool stop_job = false;     // a node was interrupted by a signal: no restart
  bool rejoin = false;       // nodes wait to join (c10d): a new round, not a failure
  std::string remote_cause;  // otherwise: what the failing node said
  std::string error_json;    // and its root cause's error document ("" when unknown)
};

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  // Agrees on the next round of the job (its first, or the one after the last verdict);
  // `restart_count` is how many restarts after failures came before it. Interruptible: a
  // signal to spmdrun throws Interrupted; a timeout raises Error(Timeout).
  virtual AttemptPlan next(int restart_count) = 0;
  // Readable when another node ended the current attempt (-1: single node).
  virtual int stop_fd() { return -1; }
  // A worker on this node failed on its own (not from a lost peer): tell the other nodes now,
  // before the local teardown, so the first such failure in the job is the one every node
  // names.
  virtual void announce_root_cause(const AttemptOutcome& /*local*/, const CauseNotice& /*cause*/) {}
  // Publishes this node's outcome and returns the job's.
  virtual Verdict conclude(const AttemptOutcome& local, const CauseNotice& cause) = 0;
  // After the verdict: whether this node takes part in the next round (a restart or a
  // membership change) or leaves the job.
  virtual void acknowledge(bool /*rejoin*/) {}
  // This node is done with the job (after its last verdict). `job_over`: so is everyone (the
  // job succeeded, was stopped, or failed for good), rather than this node alone leaving. The
  // host keeps the store up until every node has read the verdict.
  virtual void finish(bool /*job_over*/ = true) {}
};

std::unique_ptr<Rendezvous> make_rendezvous(const Options& options, SignalChannel& signals);

// Thrown out of a rendezvous wait when spmdrun gets SIGINT/SIGTERM/SIGHUP.
struct Interrupted {
  int signal;
};

}  // namespace spmd::launcher
