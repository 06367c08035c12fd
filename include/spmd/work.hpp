// Work: the handle of an asynchronous operation. Operations of one group run in the order
// they were issued; errors surface from wait().
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <optional>

namespace spmd {

class Work {
 public:
  struct State;  // shared with the group's queue; defined in src/core/work_state.hpp
  Work() = default;
  explicit Work(std::shared_ptr<State> s) : state_(std::move(s)) {}
  // A Work that is already done (an operation that ran in the caller's thread), with the
  // source rank a receive reports.
  static Work completed(int source_rank = -1);

  // Blocks until the operation finished; rethrows its error (spmd::Error). With a timeout,
  // raises Error(Timeout) if it has not finished by then (the operation keeps running).
  void wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
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
