// The node agent: runs one attempt of the job on this node. It starts the node's workers,
// pumps their output, reacts the moment one exits (SIGCHLD through the signalfd, no sleep
// loops), and on a failure, a forwarded signal or a stop request from another node tears the
// rest down: SIGTERM to each worker's process group, SIGKILL after the grace period.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "launcher/attempt_plan.hpp"
#include "launcher/child_process.hpp"
#include "launcher/options.hpp"
#include "launcher/signals.hpp"

namespace spmd::launcher {

struct WorkerFailure {
  int global_rank = -1;
  int local_rank = -1;
  int node_rank = 0;
  pid_t pid = -1;
  ExitStatus status;
  std::string time;                      // when it was seen to fail (local time)
  std::vector<std::string> stderr_tail;  // its last stderr lines
};

struct AttemptOutcome {
  enum class Kind { Succeeded, WorkerFailed, Interrupted, StoppedByPeer, StartFailed, Hung };
  Kind kind = Kind::Succeeded;
  int exit_code = 0;                     // what spmdrun exits with if this is the last attempt
  int signal = 0;                        // Interrupted: the signal spmdrun received
  std::vector<WorkerFailure> failures;   // root cause first (failures before teardown only)
  std::vector<int> stopped_ranks;        // ranks spmdrun itself stopped
  std::string message;                   // StartFailed: why; Hung: the hang in one line
};

class NodeAgent {
 public:
  NodeAgent(const Options& options, SignalChannel& signals);
  // Runs the attempt to its end. `stop_fd` (or -1) becomes readable when another node asks
  // this one to stop (its failure, or a signal it got); `hang_fd` (or -1) when the hang watch
  // reported a hung job (hang_watch.hpp), which then stops like a failed one (Kind::Hung).
  AttemptOutcome run(const AttemptPlan& plan, int stop_fd, int hang_fd = -1);
  // Where the attempt's log files went ("" when none were written).
  const std::string& attempt_log_dir() const { return attempt_log_dir_; }

 private:
  const Options& options_;
  SignalChannel& signals_;
  std::string attempt_log_dir_;
};

// The log directory torchrun would use when --redirects/--tee are given without --log-dir:
// a fresh temporary one (created; its path is printed).
std::string default_log_dir(const std::string& run_id);

}  // namespace spmd::launcher
