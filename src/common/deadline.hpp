// Deadline: the one time type every blocking call takes. Built from a timeout; tells how
// much time is left, in the units poll/futex/condition variables want.
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <ctime>

namespace spmd {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // A deadline `timeout` after `from` (now). A negative or huge timeout is clamped (never
  // overflows). `from` lets a caller that has just read the clock not read it again.
  explicit Deadline(std::chrono::milliseconds timeout, Clock::time_point from = Clock::now()) {
    auto ms = std::clamp<long long>(timeout.count(), 0, kMaxMs);
    at_ = from + std::chrono::milliseconds(ms);
  }
  // ~100 years after the clock's epoch (the steady clock counts from boot), without reading
  // the clock: every call's context starts from never() before it gets its deadline, and a
  // clock read is ~30 ns, a tenth of a small all_reduce on one host.
  static Deadline never() { return at(Clock::time_point(std::chrono::milliseconds(kMaxMs))); }
  static Deadline at(Clock::time_point t) {
    Deadline d;
    d.at_ = t;
    return d;
  }

  bool expired() const { return Clock::now() >= at_; }
  std::chrono::milliseconds remaining() const {
    auto r = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now());
    return std::max(r, std::chrono::milliseconds(0));
  }
  // Milliseconds for poll()/epoll_wait(), rounded up so a wait never ends just before the
  // deadline and spins; 0 once expired.
  int poll_ms() const {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(at_ - Clock::now()).count();
    if (us <= 0) return 0;
    return static_cast<int>(std::min<long long>((us + 999) / 1000, INT_MAX));
  }
  // Relative timespec for futex waits.
  timespec remaining_timespec() const {
    auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(at_ - Clock::now()).count();
    if (ns < 0) ns = 0;
    return timespec{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  }
  Clock::time_point time_point() const { return at_; }

 private:
  Deadline() = default;  // for at(): no clock read
  static constexpr long long kMaxMs = 100LL * 365 * 24 * 3600 * 1000;  // ~100 years
  Clock::time_point at_;
};

}  // namespace spmd
