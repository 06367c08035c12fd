// A child process for multi-process tests: spawned with extra environment variables, its
// stdout and stderr optionally captured in a file, killed and reaped when it goes out of scope.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace spmd::test {

class Child {
 public:
  // stdout_fd >= 0: the child's stdout goes there. capture: stdout and stderr go to a file
  // that output() reads.
  Child(const std::vector<std::string>& args, const std::vector<std::string>& env, int stdout_fd = -1,
        bool capture = false) {
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (char** e = environ; *e; ++e) envp.push_back(*e);
    for (auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&fa, stdout_fd, 1);
    if (capture) {
      char name[] = "/tmp/spmd-child-XXXXXX";
      int fd = ::mkstemp(name);
      log_ = name;
      posix_spawn_file_actions_adddup2(&fa, fd, 1);
      posix_spawn_file_actions_adddup2(&fa, fd, 2);
      if (posix_spawn(&pid_, args[0].c_str(), &fa, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
      ::close(fd);
    } else if (posix_spawn(&pid_, args[0].c_str(), &fa, nullptr, argv.data(), envp.data()) != 0) {
      pid_ = -1;
    }
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (!log_.empty()) ::unlink(log_.c_str());
  }
  Child(Child&& o) noexcept : pid_(std::exchange(o.pid_, -1)), log_(std::exchange(o.log_, "")) {}
  Child& operator=(Child&&) = delete;

  pid_t pid() const { return pid_; }
  void kill(int sig) const { ::kill(pid_, sig); }
  // Exit status (or 128 + signal); -1 if it did not end within `timeout`.
  int wait(std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() > end) return -1;
      // Reaping has no fd to poll on; a short sleep here waits for a child, not for a peer.
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // What the child wrote so far (capture mode).
  std::string output() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  pid_t pid_ = -1;
  std::string log_;
};

}  // namespace spmd::test
