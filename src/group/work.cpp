#include "group/work_queue.hpp"
#include "group/work_state.hpp"
#include "spmd/error.hpp"

namespace spmd {

namespace {
Work::State& require(const std::shared_ptr<Work::State>& s) {
  if (!s) raise(ErrorKind::InvalidArgument, "this Work is empty (default-constructed or moved from)");
  return *s;
}
}  // namespace

namespace {
// The one state every inline call without a source rank returns: done, never failed, so
// waiting on it needs no lock. Held without a control block (an aliasing shared_ptr that owns
// nothing): copying and dropping such Works touches no reference count.
struct FinishedState : Work::State {
  FinishedState() { done = true; }
};
// A namespace-scope object, not a function's static: checking it is a compare, with no guard.
FinishedState g_finished;
const std::shared_ptr<Work::State> g_finished_unowned(std::shared_ptr<Work::State>(), &g_finished);
}  // namespace

Work Work::completed(int source_rank) {
  if (source_rank < 0) return Work(g_finished_unowned);
  auto s = std::make_shared<State>();
  s->done = true;
  s->source_rank = source_rank;
  return Work(s);
}

namespace {
// wait(): `may_run` lets an untimed wait run an operation that has not started.
void wait_on(Work::State& s, std::optional<std::chrono::milliseconds> timeout, bool may_run) {
  if (&s == &g_finished) return;
  std::shared_ptr<DeviceCompletion> device;
  {
    std::unique_lock<std::mutex> lock(s.m);
    if (timeout) {
      if (!s.cv.wait_for(lock, *timeout, [&] { return s.done; }))
        raise(ErrorKind::Timeout, (s.what.empty() ? describe(s.call) : s.what) + " did not finish within " +
                                      std::to_string(timeout->count()) + " ms of wait(); it is still running");
    } else {
      // Not started yet: run it here rather than sleep while the worker does. The lock moves
      // into run_for, which releases it when it runs the job.
      if (may_run && !s.done && s.queue && s.queue->run_for(&s, lock)) lock.lock();
      s.cv.wait(lock, [&] { return s.done; });
    }
    if (s.failed) {
      if (!s.foreign_error) throw Error(s.error_kind, s.error_message);
      std::rethrow_exception(s.foreign_error);
    }
    device = s.device;
  }
  if (device) device->make_caller_wait();
}
}  // namespace

void Work::wait(std::optional<std::chrono::milliseconds> timeout) { wait_on(require(state_), timeout, true); }

void Work::wait_without_running() { wait_on(require(state_), std::nullopt, false); }

void Work::start() {
  State& s = require(state_);
  if (&s == &g_finished) return;
  // Under the state's lock an unfinished job keeps its queue alive (as for run_for).
  std::lock_guard<std::mutex> g(s.m);
  if (!s.done && s.queue) s.queue->start_queued();
}

void Work::synchronize(std::optional<std::chrono::milliseconds> timeout) {
  const Deadline deadline = timeout ? Deadline(*timeout) : Deadline::never();
  wait(timeout);
  State& s = require(state_);
  std::shared_ptr<DeviceCompletion> device;
  {
    std::lock_guard<std::mutex> g(s.m);
    device = s.device;
  }
  if (device) device->synchronize(deadline);
}

bool Work::is_completed() const {
  State& s = require(state_);
  if (&s == &g_finished) return true;
  std::shared_ptr<DeviceCompletion> device;
  {
    std::lock_guard<std::mutex> g(s.m);
    if (!s.done) return false;
    device = s.device;
  }
  return !device || device->ready();
}

std::exception_ptr Work::exception() const {
  State& s = require(state_);
  std::lock_guard<std::mutex> g(s.m);
  return s.error();
}

int Work::source_rank() const {
  State& s = require(state_);
  std::lock_guard<std::mutex> g(s.m);
  return s.done ? s.source_rank : -1;
}

}  // namespace spmd
