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
  std::string remote_cause;  // otherwise: what the failing node said
  std::string error_json;    // and its root cause's error document ("" when unknown)
};

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  // Agrees on attempt `restart_count`. Interruptible: a signal to spmdrun aborts the wait
  // (Error(Timeout) or the signal's InvalidArgument-free "interrupted" System error).
  virtual AttemptPlan next(int restart_count) = 0;
  // Readable when another node ended the current attempt (-1: single node).
  virtual int stop_fd() { return -1; }
  // A worker on this node failed on its own (not from a lost peer): tell the other nodes now,
  // before the local teardown, so the first such failure in the job is the one every node
  // names.
  virtual void announce_root_cause(const AttemptOutcome& /*local*/, const CauseNotice& /*cause*/) {}
  // Publishes this node's outcome and returns the job's.
  virtual Verdict conclude(const AttemptOutcome& local, const CauseNotice& cause) = 0;
  // The job is over (after the last verdict): the host keeps the store up until every node
  // has read it.
  virtual void finish() {}
};

std::unique_ptr<Rendezvous> make_rendezvous(const Options& options, SignalChannel& signals);

// Thrown out of a rendezvous wait when spmdrun gets SIGINT/SIGTERM/SIGHUP.
struct Interrupted {
  int signal;
};

}  // namespace spmd::launcher
