#include "group/work_queue.hpp"

#include <sched.h>

#include <algorithm>

namespace spmd {

namespace {
// Periods without a push after which the worker stops waking once a period.
constexpr int kQuietPeriodsBeforeSleep = 20;
}  // namespace

WorkQueue::WorkQueue(OnFailure on_failure, std::chrono::microseconds lazy_start)
    : on_failure_(std::move(on_failure)), lazy_start_(lazy_start), worker_([this] { loop(); }) {}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> g(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

uint64_t WorkQueue::reserve(bool numbered) {
  uint64_t before = state_.fetch_add(kJob + (numbered ? kNumber : 0), std::memory_order_acq_rel);
  return numbered ? before / kNumber : 0;
}

void WorkQueue::push(Run run, std::vector<std::shared_ptr<Work::State>> states, bool abort_on_failure) {
  for (auto& s : states) s->queue = this;
  bool wake = true;
  {
    std::lock_guard<std::mutex> g(m_);
    // A job queued before this one that nobody waited for is not a call about to be waited for.
    const bool left_waiting = !jobs_.empty();
    jobs_.push_back(Job{std::move(run), std::move(states), abort_on_failure, ++pushed_});
    if (lazy_start_.count() == 0 || left_waiting) {
      startable_ = pushed_;
    } else {
      wake = !ticking_;  // the worker sleeps until woken: wake it once, to start its periods
      ticking_ = true;
    }
  }
  if (wake) cv_.notify_one();
}

void WorkQueue::start_queued() {
  {
    std::lock_guard<std::mutex> g(m_);
    if (startable_ == pushed_) return;
    startable_ = pushed_;
  }
  cv_.notify_one();
}

bool WorkQueue::may_take() const {
  return !jobs_.empty() && (stopping_ || jobs_.front().number <= startable_) && !running_ &&
         !(state_.load(std::memory_order_acquire) & kInline);
}

void WorkQueue::tick() {
  // A job pushed before the last period ended has waited at least one whole period.
  startable_ = std::max(startable_, pushed_at_tick_);
  if (pushed_ != pushed_at_tick_) {
    quiet_periods_ = 0;
  } else if (++quiet_periods_ >= kQuietPeriodsBeforeSleep) {
    ticking_ = false;  // everything pushed is startable by now (see above)
  }
  pushed_at_tick_ = pushed_;
}

void WorkQueue::loop() {
  // A worker woken by a push must not preempt the thread that pushed: that thread usually
  // waits right away and runs the job itself (run_for), sooner than the worker could. With
  // the normal policy the woken worker took the CPU from it (the scheduler favours a thread
  // that slept) in up to half the calls, and the call cost two hand-offs again (docs/bench.md,
  // "Waiting runs the job"). SCHED_BATCH only gives up that wake-up preemption; the worker
  // still runs at once on an idle CPU, and at its normal weight otherwise. Failing to set it
  // changes only speed.
  sched_param normal{};
  (void)sched_setscheduler(0, SCHED_BATCH, &normal);
  auto next_tick = std::chrono::steady_clock::now();
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(m_);
      for (;;) {
        if (may_take()) break;
        if (stopping_ && jobs_.empty() && !running_ && !(state_.load(std::memory_order_acquire) & kInline))
          return;  // everything queued has run
        if (!ticking_) {
          cv_.wait(lock);
          next_tick = std::chrono::steady_clock::now() + lazy_start_;
        } else if (cv_.wait_until(lock, next_tick) == std::cv_status::timeout) {
          tick();
          next_tick = std::chrono::steady_clock::now() + lazy_start_;  // after a busy spell, one tick, not a burst
        }
      }
      job = std::move(jobs_.front());
      jobs_.pop_front();
      running_ = true;
    }
    execute(job, true);
  }
}

void WorkQueue::execute(Job& job, bool last) {
  std::exception_ptr error;
  JobResult result;
  try {
    result = job.run();
  } catch (...) {
    error = std::current_exception();
    if (job.abort_on_failure) {
      try {
        on_failure_(error);
      } catch (...) {  // the Works still get the job's own error, and the queue goes on
      }
    }
  }
  // Before the Works complete: a caller woken by one may go straight to an inline call.
  state_.fetch_sub(kJob, std::memory_order_acq_rel);
  for (auto& s : job.states) s->complete(error, result);
  if (last) {
    // Last, and under the lock: once running_ is clear the destructor may proceed, so neither
    // a waiter that ran this job nor another waiter of one of its Works (holding that Work's
    // mutex on its way into run_for, while complete() above waited for it) may find the queue
    // gone. The worker waits while running_ is set; it is woken here.
    std::lock_guard<std::mutex> g(m_);
    running_ = false;
    if (stopping_ || !jobs_.empty()) cv_.notify_one();
  }
}

bool WorkQueue::run_for(const Work::State* state, std::unique_lock<std::mutex>& state_lock) {
  std::unique_lock<std::mutex> lock(m_);
  if (stopping_ || running_ || (state_.load(std::memory_order_acquire) & kInline)) return false;
  auto holds = [state](const Job& j) {
    return std::any_of(j.states.begin(), j.states.end(), [state](const auto& s) { return s.get() == state; });
  };
  auto it = std::find_if(jobs_.begin(), jobs_.end(), holds);
  if (it == jobs_.end()) return false;  // the worker took it already
  // Ours and the jobs before it (usually none). While running_ is set nothing else takes from
  // the front of the queue, so they are taken one at a time, each as it comes up.
  size_t left = static_cast<size_t>(it - jobs_.begin()) + 1;
  running_ = true;
  Job job = std::move(jobs_.front());
  jobs_.pop_front();
  lock.unlock();
  state_lock.unlock();
  for (;;) {
    execute(job, --left == 0);
    if (left == 0) return true;
    std::lock_guard<std::mutex> g(m_);
    job = std::move(jobs_.front());
    jobs_.pop_front();
  }
}

std::optional<uint64_t> WorkQueue::claim_inline(bool numbered) {
  uint64_t now = state_.load(std::memory_order_relaxed);
  do {
    if (now & (kInline | kJobMask)) return std::nullopt;  // a job is queued or running
  } while (!state_.compare_exchange_weak(now, now + kInline + (numbered ? kNumber : 0), std::memory_order_acq_rel,
                                         std::memory_order_relaxed));
  return numbered ? now / kNumber : 0;
}

void WorkQueue::release_inline() {
  uint64_t before = state_.fetch_sub(kInline, std::memory_order_acq_rel);
  // Wake the worker only for jobs queued meanwhile: a wake-up per blocking call would make the
  // worker thread compete for a CPU on every call (measurable when ranks outnumber cores).
  // Taking the lock first means the worker is either before its check (and sees the bit
  // cleared) or asleep on the condition variable (and is woken).
  if ((before & kJobMask) == 0) return;
  { std::lock_guard<std::mutex> g(m_); }
  cv_.notify_one();
}

}  // namespace spmd
