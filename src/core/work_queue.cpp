#include "core/work_queue.hpp"

namespace spmd {

WorkQueue::WorkQueue(OnFailure on_failure) : on_failure_(std::move(on_failure)), worker_([this] { loop(); }) {}

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

void WorkQueue::push(std::function<void()> run, std::vector<std::shared_ptr<Work::State>> states,
                     bool abort_on_failure) {
  {
    std::lock_guard<std::mutex> g(m_);
    jobs_.push_back(Job{std::move(run), std::move(states), abort_on_failure});
  }
  cv_.notify_one();
}

void WorkQueue::loop() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [&] {
        return (stopping_ || !jobs_.empty()) && !(state_.load(std::memory_order_acquire) & kInline);
      });
      if (jobs_.empty()) return;  // stopping, and everything queued has run
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    std::exception_ptr error;
    try {
      job.run();
    } catch (...) {
      error = std::current_exception();
      if (job.abort_on_failure) on_failure_(error);
    }
    // Before the Works complete: a caller woken by one may go straight to an inline call.
    state_.fetch_sub(kJob, std::memory_order_acq_rel);
    for (auto& s : job.states) s->complete(error);
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
