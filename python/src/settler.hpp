// Settler: one thread per process group that settles its works in issue order (the order in
// which spmd runs a group's operations), so futures complete and is_completed() turns true
// without anyone calling wait() — what DDP's bucket overlap and comm hooks rely on.
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

  // Queues `work`; after stop(), settles it at once on this thread.
  void add(c10::intrusive_ptr<SpmdWork> work);
  // Settles everything queued, then ends the thread.
  void stop();

 private:
  void loop();

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<SpmdWork>> works_;
  bool stopping_ = false;
  std::thread thread_;  // last: starts after everything it uses exists
};

}  // namespace spmd::torch_dist
