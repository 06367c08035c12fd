// Settler: one thread per process group that settles its works in issue order (the order in
// which spmd runs a group's operations), so futures complete and is_completed() turns true
// without anyone calling wait() — what DDP's bucket overlap and comm hooks rely on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "work.hpp"

namespace spmd::torch_dist {

class Settler {
 public:
  Settler();
  ~Settler();  // settles everything queued, then stops
  Settler(const Settler&) = delete;
  Settler& operator=(const Settler&) = delete;

  void add(c10::intrusive_ptr<SpmdWork> work);
  // Waits until every work added so far is settled, at most `timeout`; false if it ran out.
  bool drain(std::chrono::milliseconds timeout);

 private:
  void loop();

  std::mutex m_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<c10::intrusive_ptr<SpmdWork>> works_;
  bool busy_ = false;  // settling one (popped) work
  bool stopping_ = false;
  std::thread thread_;  // last: starts after everything it uses exists
};

}  // namespace spmd::torch_dist
