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
      cv_.wait(lock, [&] { return (stopping_ || !jobs_.empty()) && !inline_; });
      if (jobs_.empty()) return;  // stopping, and everything queued has run
      job = std::move(jobs_.front());
      jobs_.pop_front();
      running_ = true;
    }
    std::exception_ptr error;
    try {
      job.run();
    } catch (...) {
      error = std::current_exception();
      if (job.abort_on_failure) on_failure_(error);
    }
    {
      // Before the Works complete: a caller woken by one may go straight to an inline call.
      std::lock_guard<std::mutex> g(m_);
      running_ = false;
    }
    for (auto& s : job.states) s->complete(error);
  }
}

bool WorkQueue::claim_inline() {
  std::lock_guard<std::mutex> g(m_);
  if (running_ || inline_ || !jobs_.empty()) return false;
  inline_ = true;
  return true;
}

void WorkQueue::release_inline() {
  bool queued;
  {
    std::lock_guard<std::mutex> g(m_);
    inline_ = false;
    queued = !jobs_.empty();
  }
  // Wake the worker only for jobs queued meanwhile: a wake-up per blocking call would make the
  // worker thread compete for a CPU on every call (measurable when ranks outnumber cores).
  if (queued) cv_.notify_one();
}

}  // namespace spmd
