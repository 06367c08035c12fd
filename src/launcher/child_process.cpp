#include "launcher/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "launcher/signals.hpp"
#include "spmd/error.hpp"

namespace spmd::launcher {

std::string ExitStatus::describe() const {
  if (signal != 0) return std::string(signal_name(signal)) + " (signal " + std::to_string(signal) + ")";
  return "exit code " + std::to_string(code);
}

ExitStatus ExitStatus::from_wait_status(int status) {
  ExitStatus s;
  if (WIFEXITED(status)) {
    s.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    s.signal = WTERMSIG(status);
    s.code = 128 + s.signal;
  }
  return s;
}

namespace {

struct Pipe {
  Fd read, write;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) raise_errno("creating a pipe for a worker");
    read.reset(fds[0]);
    write.reset(fds[1]);
  }
};

[[noreturn]] void report_and_exit(int report, int e) {
  ssize_t ignored = ::write(report, &e, sizeof e);
  (void)ignored;
  _exit(127);
}

// Runs in the child between fork and exec: async-signal-safe calls only, no allocation.
[[noreturn]] void exec_child(pid_t parent, char* const* argv, char* const* envp, int out, int err,
                             int report, const sigset_t* mask) {
  auto fail = [report](int e) { report_and_exit(report, e); };
  // Die with the launcher. The parent may already be gone (it died between fork and prctl):
  // then nothing would deliver the signal, so check and leave.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
  if (getppid() != parent) _exit(1);
  if (setpgid(0, 0) != 0) fail(errno);
  if (dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0) fail(errno);
  // Ignored signals stay ignored across exec; give the worker a clean start.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaction(s, &dfl, nullptr);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, mask != nullptr ? mask : &empty, nullptr);
  execvpe(argv[0], argv, envp);
  report_and_exit(report, errno);
}

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

ChildProcess ChildProcess::spawn(const SpawnSpec& spec) {
  if (spec.argv.empty()) raise(ErrorKind::InvalidArgument, "spawning a worker: empty command");
  Pipe out, err, report;
  std::vector<char*> argv = c_strings(spec.argv), envp = c_strings(spec.env);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) raise_errno("fork (starting " + spec.argv[0] + ")");
  if (pid == 0)
    exec_child(parent, argv.data(), envp.data(), out.write.get(), err.write.get(),
               report.write.get(), spec.signal_mask);

  ChildProcess child;
  child.pid_ = pid;
  // Also set the group from this side: a teardown that comes before the child runs must
  // still reach the group (whichever setpgid runs first wins; the other is harmless).
  setpgid(pid, pid);
  report.write.reset();
  out.write.reset();
  err.write.reset();
  // The report pipe closes on exec (O_CLOEXEC): EOF = started; an int = exec's errno.
  int child_errno = 0;
  ssize_t n = retry_eintr([&] { return ::read(report.read.get(), &child_errno, sizeof child_errno); });
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    // The destructor reaps the child, which has already called _exit.
    raise(ErrorKind::System, "cannot run '" + spec.argv[0] + "': " + std::strerror(child_errno) +
                                 (child_errno == ENOENT ? " (check the path, or PATH)" : ""));
  }
  fcntl(out.read.get(), F_SETFL, O_NONBLOCK);
  fcntl(err.read.get(), F_SETFL, O_NONBLOCK);
  child.out_ = std::move(out.read);
  child.err_ = std::move(err.read);
  return child;
}

ChildProcess::ChildProcess(ChildProcess&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)), status_(std::move(o.status_)), out_(std::move(o.out_)),
      err_(std::move(o.err_)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    this->~ChildProcess();
    new (this) ChildProcess(std::move(o));
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ <= 0) return;
  if (!status_) {
    signal_group(SIGKILL);
    kill(pid_, SIGKILL);
    int status = 0;
    // SIGKILL cannot be caught or ignored: this wait ends as soon as the kernel tears the
    // process down.
    retry_eintr([&] { return waitpid(pid_, &status, 0); });
  }
  pid_ = -1;
}

bool ChildProcess::try_reap() {
  if (pid_ <= 0) return true;
  if (status_) return true;
  int status = 0;
  pid_t r = retry_eintr([&] { return waitpid(pid_, &status, WNOHANG); });
  if (r == pid_) {
    status_ = ExitStatus::from_wait_status(status);
    return true;
  }
  if (r < 0 && errno == ECHILD) {  // reaped elsewhere: treat as lost
    status_ = ExitStatus{128 + SIGKILL, SIGKILL};
    return true;
  }
  return false;
}

bool ChildProcess::wait_until(const Deadline& deadline) {
  if (try_reap()) return true;
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid_, 0)));
  if (!pidfd) raise_errno("pidfd_open (waiting for pid " + std::to_string(pid_) + ")");
  while (!try_reap()) {
    if (deadline.expired()) return false;
    pollfd p{pidfd.get(), POLLIN, 0};
    if (::poll(&p, 1, deadline.poll_ms()) < 0 && errno != EINTR) raise_errno("poll on a pidfd");
  }
  return true;
}

void ChildProcess::signal_group(int sig) const {
  if (pid_ <= 0) return;
  // After the leader was reaped its pid could in principle be reused; a group with that id
  // exists only while members of the worker's own group live, so this still reaches just them.
  if (::kill(-pid_, sig) != 0 && errno == ESRCH && !status_) ::kill(pid_, sig);
}

}  // namespace spmd::launcher
