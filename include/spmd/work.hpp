// Work: the handle of an asynchronous operation. Operations of one group run in the order
// they were issued; errors surface from wait().
//
// Operations on CUDA buffers (the nccl backend) finish on the device: as with torch, wait()
// returns once the operation is queued on the group's CUDA stream and makes the caller's
// stream (the device's default stream) wait for it; synchronize() blocks the host until the
// device finished it. For CPU buffers the two are the same.
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <optional>

namespace spmd {

class Work {
 public:
  struct State;  // shared with the group's queue; defined in src/group/work_state.hpp
  Work() = default;
  explicit Work(std::shared_ptr<State> s) : state_(std::move(s)) {}
  // A Work that is already done (an operation that ran in the caller's thread), with the
  // source rank a receive reports.
  static Work completed(int source_rank = -1);

  // Blocks until the operation finished; rethrows its error (spmd::Error). With a timeout,
  // raises Error(Timeout) if it has not finished by then (the operation keeps running).
  // Without one, an operation that has not started yet runs in the calling thread (with the
  // group's operations queued before it), rather than in the group's worker thread while the
  // caller sleeps: same result, no hand-off between threads.
  void wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // wait() without a timeout that leaves the operation to the group's worker thread (or to a
  // thread that wait()s for it): for a thread that only watches operations finish, such as a
  // completion-callback thread, so that it does not take work from the threads that use it.
  void wait_without_running();
  // Has the group's worker start the operation now if it was left for its waiter
  // (GroupOptions::lazy_start); nothing for one that started or finished.
  void start();
  // Blocks until the operation finished on its device too (the same as wait() for CPU
  // buffers); raises its error, or Error(Timeout) after `timeout`.
  void synchronize(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // True once the operation finished (on its device too).
  bool is_completed() const;
  // The operation's error, if it finished with one (nullptr otherwise).
  std::exception_ptr exception() const;
  // Source rank of a completed recv (any-source receives), -1 otherwise.
  int source_rank() const;
  bool valid() const { return state_ != nullptr; }

 private:
  std::shared_ptr<State> state_;
};

}  // namespace spmd
