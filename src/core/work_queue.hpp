// WorkQueue: one worker thread per group that runs the group's operations in issue order.
// A failed job completes its Works with the exception and calls the failure hook (which makes
// the group unusable and tells the peers).
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
  std::thread worker_;  // last: starts after everything it uses exists
};

}  // namespace spmd
