// ChildProcess: one worker process, owned. It runs in its own process group (so a teardown
// reaches whatever it started), dies with the launcher (PR_SET_PDEATHSIG), and its stdout and
// stderr come back through pipes. The destructor kills the group and reaps it: no orphans, no
// zombies, whatever path the launcher leaves by.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/deadline.hpp"
#include "common/fd.hpp"

namespace spmd::launcher {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::vector<std::string> env;   // the complete environment, "KEY=VALUE"
  const sigset_t* signal_mask = nullptr;  // the mask the child starts with (else: empty)
};

// How a process ended.
struct ExitStatus {
  int code = 0;    // exit code, or 128 + signal
  int signal = 0;  // the terminating signal, 0 when it exited
  bool ok() const { return code == 0 && signal == 0; }
  std::string describe() const;  // "exit code 3", "SIGKILL (signal 9)"
  static ExitStatus from_wait_status(int status);
};

class ChildProcess {
 public:
  // Starts the process. Raises Error(System) if it cannot be started, naming the program
  // and the reason (e.g. "No such file or directory"), reported back from the child.
  static ChildProcess spawn(const SpawnSpec& spec);

  ChildProcess() = default;
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !status_; }
  const std::optional<ExitStatus>& status() const { return status_; }
  Fd& stdout_pipe() { return out_; }
  Fd& stderr_pipe() { return err_; }

  // Reaps the process if it has exited (never blocks). True once it has ended.
  bool try_reap();
  // Waits until the process ends or the deadline passes (pidfd + poll: no sleeping).
  // True once it has ended and been reaped.
  bool wait_until(const Deadline& deadline);
  // Sends sig to the child's whole process group (the child is its leader).
  void signal_group(int sig) const;

 private:
  pid_t pid_ = -1;
  std::optional<ExitStatus> status_;
  Fd out_, err_;
};

}  // namespace spmd::launcher
