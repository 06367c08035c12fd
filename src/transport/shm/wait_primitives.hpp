// The waiting primitives of the shared-memory group (shm_group.cpp, shm_waiting.cpp): futex
// sleeps and wake-ups on a word of the segment, and the membarrier registration that lets
// posts skip their fence.
#pragma once

#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <ctime>

#include "common/env.hpp"

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

// Registers this process for MEMBARRIER_CMD_GLOBAL_EXPEDITED (ShmGroup::notify_all); false
// where the kernel lacks it or a sandbox refuses it. SPMD_SHM_MEMBARRIER=0 declines.
inline bool register_membarrier() {
  if (env::get("SPMD_SHM_MEMBARRIER").value_or("1") == "0") return false;
  const long cmds = ::syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (cmds < 0 || !(cmds & MEMBARRIER_CMD_GLOBAL_EXPEDITED) || !(cmds & MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED))
    return false;
  return ::syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0;
}

inline int online_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace spmd::shm
