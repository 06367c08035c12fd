// The waiting primitives of the shared-memory group (shm_group.cpp, shm_waiting.cpp): futex
// sleeps and wake-ups on a word of the segment.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <ctime>


namespace spmd::shm {

// False when the wait ran out its time (no wake-up came).
inline bool futex_wait(std::atomic<uint32_t>& word, uint32_t seen, std::chrono::nanoseconds at_most) {
  timespec ts{static_cast<time_t>(at_most.count() / 1000000000), static_cast<long>(at_most.count() % 1000000000)};
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, seen, &ts, nullptr, 0) == 0 ||
         errno != ETIMEDOUT;
}

inline void futex_wake(std::atomic<uint32_t>& word, int waiters) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, waiters, nullptr, nullptr, 0);
}

}  // namespace spmd::shm
