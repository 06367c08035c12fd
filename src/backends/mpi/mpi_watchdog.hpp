// Deadlines for blocking MPI calls. MPI cannot interrupt or cancel a collective once it
// started, and the backend's calls block inside MPI (MPI's nonblocking collectives measured
// 2-3x slower here), so a call that outlives its deadline cannot return an error: a watchdog
// thread, one per process, notices it, prints the Timeout error naming the group, the call
// and its number, and ends the job with MPI_Abort (as torch's NCCL watchdog does).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "backends/mpi/mpi_api.hpp"
#include "call/call.hpp"

namespace spmd::mpi {

// Exit status of a job the watchdog ended (as coreutils' timeout).
inline constexpr int kTimeoutExitCode = 124;

// The call one group runs now (a group runs one at a time). Starting and ending a call are a
// few relaxed atomic stores: nothing on the latency path waits for the watchdog.
class InFlight {
 public:
  void begin(const OpContext& op) noexcept;
  // A step that is not one of the group's calls (creating its communicator).
  void begin_step(const char* what, Deadline deadline) noexcept;
  void end() noexcept { deadline_ns_.store(0, std::memory_order_release); }

  // For the watchdog: the description of the call in flight if its deadline passed, else "".
  std::string overdue(int64_t now_ns) const;

 private:
  std::atomic<int64_t> deadline_ns_{0};  // 0: idle
  std::atomic<uint64_t> sig_bits_{0}, count_{0}, seq_{0};
  std::atomic<int64_t> timeout_ms_{0};
  std::atomic<const char*> step_{nullptr};
};

// Registers a group with the process's watchdog for its lifetime.
class WatchdogRegistration {
 public:
  WatchdogRegistration(InFlight* slot, std::string group, Api* api, Comm* comm);
  ~WatchdogRegistration();
  WatchdogRegistration(const WatchdogRegistration&) = delete;
  WatchdogRegistration& operator=(const WatchdogRegistration&) = delete;

 private:
  InFlight* slot_;
};

}  // namespace spmd::mpi
