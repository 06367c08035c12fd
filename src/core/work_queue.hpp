// WorkQueue: one worker thread per group that runs the group's operations in issue order.
// A failed job completes its Works with the exception and calls the failure hook (which makes
// the group unusable and tells the peers). A blocking call may instead run in its caller's
// thread when nothing is queued or running (claim_inline): no thread hand-off on the latency
// path, and the worker waits until the inline call is done before it starts later jobs.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/work_state.hpp"

namespace spmd {

class WorkQueue {
 public:
  using OnFailure = std::function<void(std::exception_ptr)>;
  explicit WorkQueue(OnFailure on_failure);
  // Runs what is still queued, then stops the worker.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `run`; every state completes when it returns (or throws). A failure of a job that
  // does not touch the connections (abort_on_failure false) leaves the group usable.
  void push(std::function<void()> run, std::vector<std::shared_ptr<Work::State>> states,
            bool abort_on_failure = true);

  // True (and the caller now runs an operation itself) when no job is queued or running;
  // the caller must call release_inline() when done.
  bool claim_inline();
  void release_inline();
  OnFailure& on_failure() { return on_failure_; }

 private:
  struct Job {
    std::function<void()> run;
    std::vector<std::shared_ptr<Work::State>> states;
    bool abort_on_failure = true;
  };
  void loop();

  OnFailure on_failure_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  bool running_ = false;  // the worker is inside a job
  bool inline_ = false;   // a caller runs an operation itself
  std::thread worker_;  // last: starts after everything it uses exists
};

}  // namespace spmd
