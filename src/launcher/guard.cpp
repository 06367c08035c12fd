#include "launcher/guard.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>

#include "common/deadline.hpp"
#include "common/fd.hpp"
#include "common/error_text.hpp"
#include "launcher/process_tree.hpp"
#include "launcher/signals.hpp"
#include "launcher/stream_pump.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {

pid_t g_guard_pid = 0;

void say(const std::string& text) { write_all(2, text.data(), text.size()); }

sigset_t guard_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaddset(&set, s);
  return set;
}

// Reaps every child that has ended; records the launcher's wait status when it is among them.
void reap_children(pid_t launcher, std::optional<int>& launcher_status) {
  int status = 0;
  pid_t pid;
  while ((pid = retry_eintr([&] { return waitpid(-1, &status, WNOHANG); })) > 0)
    if (pid == launcher) launcher_status = status;
}

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return std::string("was killed by ") + signal_name(sig) + " (signal " + std::to_string(sig) + ")";
  }
  return "ended with exit code " + std::to_string(WEXITSTATUS(status));
}

// After the launcher ended: whatever of the job is still alive was re-parented to the guard
// (nothing, when the launcher finished its own teardown). Stop it: SIGTERM, then SIGKILL
// after the grace period, waking on SIGCHLD to see whether anything is left.
void stop_leftovers(pid_t launcher, int launcher_status, int signal_fd, double grace_period_s) {
  pid_t self = getpid();
  std::vector<ProcessInfo> left = live_descendants(self);
  if (left.empty()) return;
  std::string list;
  for (size_t i = 0; i < left.size() && i < 10; ++i) list += (i ? ", " : "") + describe_process(left[i]);
  if (left.size() > 10) list += ", ...";
  say("spmdrun: its launcher process (pid " + std::to_string(launcher) + ") " +
      describe_wait_status(launcher_status) + " and left " + std::to_string(left.size()) +
      " process(es) of the job running: " + list + "; stopping them (SIGTERM, then SIGKILL after " +
      duration_text(grace_period_s) + ")\n");
  signal_descendants(self, SIGTERM);
  Deadline grace(std::chrono::milliseconds(static_cast<long long>(grace_period_s * 1000)));
  std::optional<int> ignored;
  while (!grace.expired() && !live_descendants(self).empty()) {
    pollfd p{signal_fd, POLLIN, 0};
    if (::poll(&p, 1, grace.poll_ms()) < 0 && errno != EINTR) break;
    signalfd_siginfo info{};
    bool hurry = false;
    while (::read(signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info))
      hurry = hurry || info.ssi_signo != SIGCHLD;  // a second signal: no more waiting
    reap_children(-1, ignored);
    if (hurry) break;
  }
  kill_all_descendants([](pid_t) { return false; }, Deadline(std::chrono::seconds(10)));
}

int run_guard(pid_t launcher, const sigset_t& original_mask, double grace_period_s) {
  sigset_t set = guard_signals();
  Fd signal_fd(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signal_fd) raise_errno("signalfd (spmdrun's guard)");
  std::optional<int> status;
  reap_children(launcher, status);
  while (!status) {
    pollfd p{signal_fd.get(), POLLIN, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) raise_errno("poll (spmdrun's guard)");
    signalfd_siginfo info{};
    while (::read(signal_fd.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      int sig = static_cast<int>(info.ssi_signo);
      if (sig != SIGCHLD) ::kill(launcher, sig);
    }
    reap_children(launcher, status);
  }
  stop_leftovers(launcher, *status, signal_fd.get(), grace_period_s);
  sigprocmask(SIG_SETMASK, &original_mask, nullptr);
  if (WIFSIGNALED(*status)) {
    // The launcher could not report anything itself: say what happened to it.
    say("spmdrun: its launcher process (pid " + std::to_string(launcher) + ") " +
        describe_wait_status(*status) + "\n");
    return 128 + WTERMSIG(*status);
  }
  return WEXITSTATUS(*status);
}

}  // namespace

int guard_lost_signal() { return SIGRTMIN + 2; }

pid_t guard_pid() { return g_guard_pid; }

int run_guarded(const std::function<int()>& launcher, double grace_period_s) {
  become_subreaper();
  // Block the signals the guard reads before forking, so none is lost in between; the
  // launcher gets the original mask back.
  sigset_t set = guard_signals(), original;
  if (sigprocmask(SIG_BLOCK, &set, &original) != 0) raise_errno("blocking signals (spmdrun's guard)");
  pid_t guard = getpid();
  pid_t pid = fork();
  if (pid < 0) raise_errno("fork (starting spmdrun's launcher process)");
  if (pid == 0) {
    // The launcher. Its own process group: signals from a terminal reach it through the guard
    // only (not twice). The guard-lost signal stays blocked and is read through the launcher's
    // signalfd; if the guard is already gone, raise it now (PDEATHSIG would never come).
    setpgid(0, 0);
    sigset_t mask = original;
    sigaddset(&mask, guard_lost_signal());
    sigprocmask(SIG_SETMASK, &mask, nullptr);
    if (prctl(PR_SET_PDEATHSIG, guard_lost_signal()) != 0) raise_errno("prctl(PR_SET_PDEATHSIG)");
    if (getppid() != guard) ::kill(getpid(), guard_lost_signal());
    become_subreaper();  // not inherited across fork
    g_guard_pid = guard;
    return launcher();
  }
  setpgid(pid, pid);  // also from this side, whichever runs first
  // A closed console must not kill the guard (the launcher would take that for kill -9).
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, nullptr);
  return run_guard(pid, original, grace_period_s);
}

}  // namespace spmd::launcher
