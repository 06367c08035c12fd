// spmdrun's hang watch (--hang-timeout): while an attempt runs, a thread reads the workers'
// heartbeats from the launcher's store (each rank publishes its groups' progress there, see
// group/observe/exchange.hpp) and, when no rank of a group has progressed for the hang timeout
// while some rank of it is inside a call, asks every rank for its flight records, prints the
// hang report (which ranks lag, in which call, what they were last doing) and makes its fd
// readable: the agent then stops the job like any failure. Node 0 watches; the others only
// give their workers SPMD_HEARTBEAT=1.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/fd.hpp"
#include "launcher/attempt_plan.hpp"
#include "launcher/options.hpp"
#include "spmd/store.hpp"

namespace spmd::launcher {

// spmdrun's exit status after it stopped a hung job (as timeout(1) uses).
inline constexpr int kHangExitCode = 124;

// "--hang-timeout 5", "90s", "2m", "1h", "0" (off): seconds, or raises InvalidArgument.
double parse_duration(const std::string& flag, const std::string& text);

// The hang timeout in effect: --hang-timeout, else half of SPMD_TIMEOUT (600 s by default).
double hang_timeout_s(const Options& o);

// Before the workers start: heartbeats on (SPMD_HEARTBEAT=1 in the workers' environment)
// when the watch is on.
void prepare_hang_watch(const Options& o);

class HangWatch {
 public:
  // Watches this attempt when the hang timeout is on and this is node 0; else idles (fd -1).
  HangWatch(const Options& o, const AttemptPlan& plan);
  ~HangWatch();
  HangWatch(const HangWatch&) = delete;
  HangWatch& operator=(const HangWatch&) = delete;

  int fd() const { return event_.valid() ? event_.get() : -1; }  // readable after a hang
  std::string summary() const;  // the hang in one line (for the failure report)

 private:
  void run(const AttemptPlan plan, double timeout_s);
  void report_hang(Store& store, const std::vector<int>& world, const std::string& group, double idle_s);

  Fd event_;
  Fd quit_;
  std::thread thread_;
  mutable std::mutex m_;
  std::string summary_;
};

}  // namespace spmd::launcher
