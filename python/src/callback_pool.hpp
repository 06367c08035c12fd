// CallbackPool: threads that complete torch futures. Completing a future runs its callbacks
// (DDP comm hooks, `.then(...)` chains), and a callback may block on a later operation's future
// (PowerSGD does). So a callback never runs on the thread that settles operations, and a new
// thread starts whenever every existing one is busy: blocked callbacks cannot starve the rest.
#pragma once

#include <functional>
#include <memory>

namespace spmd::torch_dist {

class CallbackPool {
 public:
  CallbackPool();
  ~CallbackPool() { shutdown(); }
  CallbackPool(const CallbackPool&) = delete;
  CallbackPool& operator=(const CallbackPool&) = delete;

  // Runs `job` on a pool thread (at once on this thread after shutdown()).
  void post(std::function<void()> job);
  // Runs what is queued, then stops every thread. A callback may drop the last reference to
  // the pool, so a pool thread that gets here detaches itself instead of joining itself (the
  // threads share the queue's state, which outlives the pool).
  void shutdown();

 private:
  struct State;
  static void loop(std::shared_ptr<State> s);
  std::shared_ptr<State> state_;
};

}  // namespace spmd::torch_dist
