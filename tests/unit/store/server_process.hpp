// Runs store_server_for_tests (store_server_main.cpp) as a child process: its port, and its
// memory as the kernel and the server itself see it.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/fd.hpp"

namespace spmd::store_test {

class ServerProcess {
 public:
  struct Stats {
    long vmhwm_kb = -1, vmrss_kb = -1;
    size_t memory = 0, peak = 0, connections = 0, keys = 0;
    bool sanitized = false;
  };

  explicit ServerProcess(const std::vector<std::string>& args) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe2");
    std::vector<std::string> all = {STORE_SERVER_BIN};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    to_ = Fd(in[1]);
    from_ = Fd(out[0]);
    std::string first = line();
    if (first.rfind("port ", 0) != 0) throw std::runtime_error("server said: " + first);
    port_ = static_cast<uint16_t>(std::stoi(first.substr(5)));
  }

  ~ServerProcess() {
    to_.reset();  // end of stdin: the server exits
    for (int i = 0; i < 1000; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }

  uint16_t port() const { return port_; }

  Stats stats() {
    const char ask[] = "stats\n";
    if (::write(to_.get(), ask, sizeof ask - 1) != static_cast<ssize_t>(sizeof ask - 1))
      throw std::runtime_error("the server process is gone");
    std::istringstream in(line());
    Stats s;
    std::string name;
    while (in >> name) {
      if (name == "vmhwm_kb") in >> s.vmhwm_kb;
      else if (name == "vmrss_kb") in >> s.vmrss_kb;
      else if (name == "memory") in >> s.memory;
      else if (name == "peak") in >> s.peak;
      else if (name == "connections") in >> s.connections;
      else if (name == "keys") in >> s.keys;
      else if (name == "sanitized") in >> s.sanitized;
    }
    return s;
  }

 private:
  // One line from the server, within 30 s.
  std::string line() {
    std::string s;
    for (;;) {
      pollfd p{from_.get(), POLLIN, 0};
      if (::poll(&p, 1, 30000) <= 0) throw std::runtime_error("no answer from the server process");
      char c;
      if (::read(from_.get(), &c, 1) != 1) throw std::runtime_error("the server process exited");
      if (c == '\n') return s;
      s += c;
    }
  }

  pid_t pid_ = -1;
  Fd to_, from_;
  uint16_t port_ = 0;
};

}  // namespace spmd::store_test
