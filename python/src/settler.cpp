#include "settler.hpp"

#include <sched.h>

#include "gil.hpp"

namespace spmd::torch_dist {

Settler::Settler() : thread_([this] { loop(); }) {}

void Settler::stop() {
  {
    std::lock_guard<std::mutex> g(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  WithoutGil no_gil;  // settling may free tensors whose Python objects need the GIL
  if (thread_.joinable()) thread_.join();
}

void Settler::add(c10::intrusive_ptr<SpmdWork> work) {
  {
    std::lock_guard<std::mutex> g(m_);
    if (!stopping_) {
      works_.push_back(std::move(work));
      cv_.notify_one();
      return;
    }
  }
  WithoutGil no_gil;
  work->settle();
}

void Settler::loop() {
  // Woken by every add(), it must not take the CPU from the thread that issued the work (which
  // usually waits at once and runs it): SCHED_BATCH gives up only wake-up preemption, as the
  // group's worker thread does (docs/bench.md, "Waiting runs the job").
  sched_param normal{};
  (void)sched_setscheduler(0, SCHED_BATCH, &normal);
  std::unique_lock<std::mutex> lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !works_.empty(); });
    if (works_.empty()) return;
    c10::intrusive_ptr<SpmdWork> work = std::move(works_.front());
    works_.pop_front();
    lock.unlock();
    // Without a timeout it does not throw: errors go into the work.
    work->settle(std::nullopt, /*may_run=*/false);
    // Ours may be the last reference to the work's tensors. While Python finalizes, freeing them
    // would ask for the GIL and abort the process: the process is ending, so the work is left
    // to it. (The settler of a group released by its users stops in release_resources(), and
    // the atexit hook stops the others, so this is a last guard, not the usual way out.)
    if (python_finalizing()) (void)work.release();
    else work.reset();
    lock.lock();
  }
}

}  // namespace spmd::torch_dist
