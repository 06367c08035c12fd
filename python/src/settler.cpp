#include "settler.hpp"

#include <sched.h>

#include <vector>

#include "gil.hpp"

namespace spmd::torch_dist {

namespace {
// Ours may be the last reference to a work's tensors. While Python finalizes, freeing them would
// ask for the GIL and abort the process: the process is ending, so the work is left to it. (The
// settler of a group released by its users stops in release_resources(), and the atexit hook
// stops the others, so this is a last guard, not the usual way out.)
void drop(c10::intrusive_ptr<SpmdWork>& work) {
  if (python_finalizing()) (void)work.release();
  else work.reset();
}
}  // namespace

Settler::Settler() : thread_([this] { loop(); }) {}

void Settler::stop() {
  {
    std::lock_guard<std::mutex> g(m_);
    stopping_ = true;
    wanted_ = works_.size();
  }
  cv_.notify_all();
  WithoutGil no_gil;  // settling may free tensors whose Python objects need the GIL
  if (thread_.joinable()) thread_.join();
}

void Settler::add(c10::intrusive_ptr<SpmdWork> work, bool wake) {
  prune();
  {
    std::lock_guard<std::mutex> g(m_);
    if (!stopping_) {
      works_.push_back(std::move(work));
      if (wake) {
        wanted_ = works_.size();
        cv_.notify_one();
      }
      return;
    }
  }
  WithoutGil no_gil;
  work->settle();
}

void Settler::wake() {
  {
    std::lock_guard<std::mutex> g(m_);
    if (wanted_ == works_.size()) return;
    wanted_ = works_.size();
  }
  cv_.notify_one();
}

void Settler::prune() {
  std::vector<c10::intrusive_ptr<SpmdWork>> settled, finished;
  {
    std::lock_guard<std::mutex> g(m_);
    // While the thread is at work the order of settling is its to keep.
    const bool thread_idle = wanted_ == 0;
    while (!works_.empty()) {
      SpmdWork& front = *works_.front();
      if (front.settled()) {
        settled.push_back(std::move(works_.front()));
      } else if (thread_idle && front.finished()) {
        finished.push_back(std::move(works_.front()));
      } else {
        break;
      }
      works_.pop_front();
      if (wanted_ > 0) --wanted_;
    }
  }
  for (auto& work : finished) work->settle();  // finished: settling does not wait
}

void Settler::loop() {
  // Woken when a work needs it, it must not take the CPU from the thread that issued the work:
  // SCHED_BATCH gives up only wake-up preemption, as the group's worker thread does
  // (docs/bench.md, "Waiting runs the job").
  sched_param normal{};
  (void)sched_setscheduler(0, SCHED_BATCH, &normal);
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || wanted_ > 0; });
    if (works_.empty()) {
      wanted_ = 0;
      if (stopping_) return;
      continue;
    }
    c10::intrusive_ptr<SpmdWork> work = std::move(works_.front());
    works_.pop_front();
    --wanted_;
    lock.unlock();
    // Without a timeout it does not throw: errors go into the work.
    work->settle(std::nullopt, /*may_run=*/false);
    drop(work);
    lock.lock();
  }
}

}  // namespace spmd::torch_dist
