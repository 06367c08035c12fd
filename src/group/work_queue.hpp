// WorkQueue: one worker thread per group that runs the group's operations in issue order.
// A failed job completes its Works with the exception and calls the failure hook (which makes
// the group unusable and tells the peers). A blocking call may instead run in its caller's
// thread when nothing is queued or running (claim_inline): no thread hand-off on the latency
// path, and the worker waits until the inline call is done before it starts later jobs.
//
// The queue also numbers the group's collectives. Numbering, counting jobs and claiming the
// inline path share one atomic word, so an inline claim is a single compare-and-swap (no lock
// on the latency path) and takes a number exactly when no queued job holds an earlier one:
// every call runs in number order.
//
// A thread that waits for a queued job which has not started runs it itself (run_for), with the
// jobs queued before it: the worker would have run them in that order while the caller slept,
// and two thread hand-offs per call (to the worker and back) cost more than the call on one host.
//
// With a lazy start period (GroupOptions::lazy_start) a push does not even wake the worker: the
// job is left to its waiter, and the worker — awake once a period while such jobs come —
// starts a job that has waited a whole period, or at once when asked (start_queued) or when
// another job is pushed behind it. A caller that waits right after issuing then costs no
// wake-up of another thread at all.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "group/work_state.hpp"

namespace spmd {

class WorkQueue {
 public:
  using OnFailure = std::function<void(std::exception_ptr)>;
  using Run = std::function<JobResult()>;
  explicit WorkQueue(OnFailure on_failure, std::chrono::microseconds lazy_start = {});
  // Runs what is still queued, then stops the worker.
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Counts a job about to be pushed and returns its call number (0 and no number used when
  // `numbered` is false). Callers that push from several threads reserve and push under one
  // lock of theirs, so the queue holds the jobs in number order.
  uint64_t reserve(bool numbered);
  // Queues `run` (reserved before); every state completes with what it returns (or throws).
  // A failure of a job that does not touch the connections (abort_on_failure false) leaves
  // the group usable.
  void push(Run run, std::vector<std::shared_ptr<Work::State>> states, bool abort_on_failure = true);

  // When no job is queued or running: the caller now runs an operation itself, and gets its
  // call number (0 when not `numbered`); it must call release_inline() when done.
  std::optional<uint64_t> claim_inline(bool numbered);
  void release_inline();
  // Called by a waiter holding `state->m` (so the job of `state` is not finished, and this queue
  // is alive: the destructor waits for that job). When the job is still queued and no job is
  // running, takes it and the jobs before it, unlocks `state_lock`, runs them in this thread and
  // returns true (the job finished); otherwise returns false with `state_lock` still held.
  bool run_for(const Work::State* state, std::unique_lock<std::mutex>& state_lock);
  // Lets the worker start every queued job now (those a lazy start left to their waiters).
  void start_queued();
  OnFailure& on_failure() { return on_failure_; }

 private:
  struct Job {
    Run run;
    std::vector<std::shared_ptr<Work::State>> states;
    bool abort_on_failure = true;
    uint64_t number = 0;  // pushes so far, this one included
  };
  void loop();
  // Under m_: the worker may take the front job now.
  bool may_take() const;
  // Under m_, in the worker: one lazy-start period passed.
  void tick();
  // Runs one job taken from the queue and completes its states; the `last` of those taken
  // together clears running_.
  void execute(Job& job, bool last);

  OnFailure on_failure_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  bool running_ = false;  // a job is running (in the worker, or in a waiter: run_for)
  // Lazy start (all under m_): jobs numbered up to `startable_` may be taken by the worker;
  // `pushed_` jobs were pushed in all, `pushed_at_tick_` by the last period's end. The worker
  // wakes once a period while `ticking_`, and stops after a few periods without a push.
  const std::chrono::microseconds lazy_start_;
  uint64_t pushed_ = 0, startable_ = 0, pushed_at_tick_ = 0;
  bool ticking_ = false;
  int quiet_periods_ = 0;
  // bit 0: a caller runs an operation inline; bits 1-23: jobs reserved and not finished;
  // bits 24-63: the next call number.
  static constexpr uint64_t kInline = 1, kJob = 2, kJobMask = (uint64_t{1} << 24) - 2, kNumber = uint64_t{1} << 24;
  std::atomic<uint64_t> state_{0};
  std::thread worker_;  // last: starts after everything it uses exists
};

}  // namespace spmd
