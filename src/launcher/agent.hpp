// The node agent: runs one attempt of the job on this node. It starts the node's workers,
// pumps their output, reacts the moment one exits (SIGCHLD through the signalfd, no sleep
// loops), and on a failure, a forwarded signal or a stop request from another node tears the
// rest down: SIGTERM to every process below spmdrun (workers and whatever they started),
// SIGKILL after the grace period. When the workers are done, processes they left running are
// stopped the same way, and named.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/attempt_plan.hpp"
#include "launcher/child_process.hpp"
#include "launcher/error_file.hpp"
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
  bool lost_peer = false;                // it failed because a peer was lost: a consequence
  std::optional<WorkerErrorFile> error_file;  // what its @record wrote (PyTorch), if anything
  std::string hint;                      // what to try, when spmdrun recognises the failure
};

struct AttemptOutcome {
  enum class Kind { Succeeded, WorkerFailed, Interrupted, StoppedByPeer, StartFailed, Hung };
  Kind kind = Kind::Succeeded;
  int exit_code = 0;                     // what spmdrun exits with if this is the last attempt
  int signal = 0;                        // Interrupted: the signal spmdrun received
  // Root cause first (root_cause.hpp), then in the order seen. Failures during a teardown
  // count only when the worker ended by a signal spmdrun did not send.
  std::vector<WorkerFailure> failures;
  std::vector<int> stopped_ranks;        // ranks spmdrun itself stopped
  std::vector<std::string> leftovers;    // processes still running after every worker ended
  std::string message;                   // StartFailed: why; Hung: the hang in one line
};

class NodeAgent {
 public:
  NodeAgent(const Options& options, SignalChannel& signals);
  // Called once, the moment a failure that is not a lost peer's consequence becomes the root
  // cause (outcome.failures.front()), so other nodes learn of it before the local teardown.
  using RootCauseListener = std::function<void(const AttemptOutcome&)>;
  // Runs the attempt to its end. `stop_fd` (or -1) becomes readable when another node asks
  // this one to stop (its failure, or a signal it got); `hang_fd` (or -1) when the hang watch
  // reported a hung job (hang_watch.hpp), which then stops like a failed one (Kind::Hung).
  AttemptOutcome run(const AttemptPlan& plan, int stop_fd, const RootCauseListener& on_root_cause = {},
                     int hang_fd = -1);
  // Where the attempt's log files went ("" when none were written).
  const std::string& attempt_log_dir() const { return attempt_log_dir_; }

 private:
  const Options& options_;
  SignalChannel& signals_;
  std::string attempt_log_dir_;
};

}  // namespace spmd::launcher
