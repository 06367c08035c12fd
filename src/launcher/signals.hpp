// The launcher's signals, read through one signalfd in the agent's poll loop: SIGCHLD (a
// worker exited: react at once, no sleep loops), SIGINT/SIGTERM/SIGHUP (forwarded to the
// workers, then teardown) and guard_lost_signal() (spmdrun's guard process died: teardown). Blocked for the process; workers get the original mask back.
#pragma once

#include <signal.h>

#include <optional>
#include <string>

#include "common/fd.hpp"

namespace spmd::launcher {

class SignalChannel {
 public:
  SignalChannel();   // blocks the signals and opens the signalfd; ignores SIGPIPE
  ~SignalChannel();  // restores the mask and SIGPIPE
  SignalChannel(const SignalChannel&) = delete;
  SignalChannel& operator=(const SignalChannel&) = delete;

  int fd() const { return fd_.get(); }
  // Reads one pending signal number, if any (never blocks).
  std::optional<int> read_one();
  // The mask (and dispositions) a new worker must start with: what we had before.
  const sigset_t& original_mask() const { return original_mask_; }

 private:
  Fd fd_;
  sigset_t saved_mask_;     // restored on destruction
  sigset_t original_mask_;  // for workers
  struct sigaction original_pipe_ {};
};

// "SIGKILL", "SIGSEGV", ... ("signal 42" for unnamed ones).
const char* signal_name(int sig);

// What a signal to spmdrun means, for messages: "received SIGINT", or, for
// guard_lost_signal(), "was killed (pid <guard>)".
std::string interruption_text(int sig);

}  // namespace spmd::launcher
