#include "launcher/signals.hpp"

#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "launcher/guard.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

namespace {
sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, guard_lost_signal()}) sigaddset(&set, s);
  return set;
}
}  // namespace

SignalChannel::SignalChannel() {
  sigset_t set = handled_signals();
  if (pthread_sigmask(SIG_BLOCK, &set, &saved_mask_) != 0) raise_errno("blocking signals");
  // Workers start with the mask spmdrun had, less the guard's signal (blocked in a guarded
  // launcher from its first instruction, so that none is lost before this signalfd exists).
  original_mask_ = saved_mask_;
  sigdelset(&original_mask_, guard_lost_signal());
  fd_.reset(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!fd_) raise_errno("signalfd");
  // A closed terminal or pipe on our stdout must not kill the launcher (and with it the
  // workers' cleanup); writes then fail with EPIPE and are dropped.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &original_pipe_);
}

SignalChannel::~SignalChannel() {
  sigaction(SIGPIPE, &original_pipe_, nullptr);
  fd_.reset();
  // Drop what is still pending (an old SIGCHLD) before unblocking, so it is not delivered
  // with its default action later.
  pthread_sigmask(SIG_SETMASK, &saved_mask_, nullptr);
}

std::optional<int> SignalChannel::read_one() {
  signalfd_siginfo info{};
  ssize_t n = retry_eintr([&] { return ::read(fd_.get(), &info, sizeof info); });
  if (n != static_cast<ssize_t>(sizeof info)) return std::nullopt;
  return static_cast<int>(info.ssi_signo);
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGCHLD: return "SIGCHLD";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: break;
  }
  static thread_local char buf[32];
  std::snprintf(buf, sizeof buf, "signal %d", sig);
  return buf;
}

std::string interruption_text(int sig) {
  if (sig == guard_lost_signal()) return "was killed (pid " + std::to_string(guard_pid()) + ")";
  return std::string("received ") + signal_name(sig);
}

}  // namespace spmd::launcher
