// Settler: keeps a process group's works until they are settled, and settles them in issue
// order (the order in which spmd runs a group's operations) when nobody else does.
//
// Most works are settled by the thread that waits for them — torch's blocking calls wait right
// away — so the settler's thread sleeps through them: a wake-up per call would cost more than
// the call. It is woken for the works that need settling without a waiter: one whose future
// someone holds (DDP's bucket overlap and comm hooks rely on futures completing by themselves),
// one whose results must be copied back or whose end the profiler records. A work whose
// operation finished is settled by the next add() if the thread is not at work. Until settled,
// the settler's reference keeps a work's tensors alive, also when its users drop it early.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "work.hpp"

namespace spmd::torch_dist {

class Settler {
 public:
  Settler();
  ~Settler() { stop(); }
  Settler(const Settler&) = delete;
  Settler& operator=(const Settler&) = delete;

  // Keeps `work` until it is settled. `wake`: the thread settles it (and those before it) as
  // soon as its operation finishes. After stop(), settles it at once on this thread.
  void add(c10::intrusive_ptr<SpmdWork> work, bool wake);
  // The thread settles every work kept so far (someone took the future of one of them).
  void wake();
  // In the caller's thread: drops the settled works at the front, and settles finished ones
  // there unless the thread is at work. Never waits for an operation.
  void prune();
  // Settles everything kept, then ends the thread.
  void stop();

 private:
  void loop();

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<SpmdWork>> works_;
  size_t wanted_ = 0;  // the first wanted_ of works_ are for the thread to settle
  bool stopping_ = false;
  std::thread thread_;  // last: starts after everything it uses exists
};

}  // namespace spmd::torch_dist
