// SpinLock: a lock for critical sections of a few dozen instructions that are almost never
// contended (the flight recorder's ring: written by the one thread that runs a group's calls,
// read by the observer about once a second). Taking it is one atomic exchange and releasing
// it one plain store, where a std::mutex costs two locked instructions and a call into
// libc on every call of the latency path. A waiter yields the CPU at once: ranks may
// outnumber cores, and the holder may be the thread that needs this one.
#pragma once

#include <sched.h>

#include <atomic>

namespace spmd {

class SpinLock {
 public:
  void lock() noexcept {
    while (held_.exchange(true, std::memory_order_acquire))
      while (held_.load(std::memory_order_relaxed)) ::sched_yield();
  }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

}  // namespace spmd
