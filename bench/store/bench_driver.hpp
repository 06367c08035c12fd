// The store benchmark's driver, shared by the spmd and the LibTorch client programs.
// N client PROCESSES (fork) run four phases against one server; each phase starts together
// (a barrier through the store itself, not timed):
//   set     each client sets `ops` distinct keys (32-byte values)
//   get     each client gets them back (verified)
//   add     every client adds 1 to one shared counter `ops` times (total verified)
//   barrier `rounds` times: add(arrived) then the last one sets a key that all wait for
// Reported: aggregate ops/s = N·ops / slowest client's time, and the mean time per op.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace bench {

struct Client {
  virtual ~Client() = default;
  virtual void set(const std::string& key, const std::vector<uint8_t>& value) = 0;
  virtual std::vector<uint8_t> get(const std::string& key) = 0;
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  virtual void wait(const std::string& key) = 0;
};
using Factory = std::function<std::unique_ptr<Client>()>;

struct Config {
  std::string impl;
  int clients = 1;
  int ops = 0;     // per client; 0 = 20000 / clients (at least 200)
  int rounds = 0;  // barrier rounds; 0 = 2000 / clients (at least 50)
};

constexpr int kPhases = 4;
const char* const kPhaseNames[kPhases] = {"set", "get", "add", "barrier"};

inline void sync(Client& c, int clients, const std::string& name) {
  if (c.add(name + "/arrived", 1) == clients) c.set(name + "/go", {1});
  c.wait(name + "/go");
}

// One client process: returns each phase's seconds.
inline std::vector<double> run_client(Client& c, int id, const Config& cfg) {
  using clock = std::chrono::steady_clock;
  std::vector<double> secs(kPhases);
  std::vector<uint8_t> value(32, static_cast<uint8_t>(id));
  std::vector<std::string> keys;
  for (int j = 0; j < cfg.ops; ++j) keys.push_back("k/" + std::to_string(id) + "/" + std::to_string(j));
  for (int phase = 0; phase < kPhases; ++phase) {
    sync(c, cfg.clients, std::string("start/") + kPhaseNames[phase]);
    auto t0 = clock::now();
    switch (phase) {
      case 0:
        for (const auto& k : keys) c.set(k, value);
        break;
      case 1:
        for (const auto& k : keys)
          if (c.get(k) != value) {
            std::fprintf(stderr, "client %d: wrong value for %s\n", id, k.c_str());
            std::_Exit(3);
          }
        break;
      case 2:
        for (int j = 0; j < cfg.ops; ++j) c.add("counter", 1);
        break;
      case 3:
        for (int r = 0; r < cfg.rounds; ++r) {
          std::string b = "b/" + std::to_string(r);
          if (c.add(b, 1) == cfg.clients) c.set(b + "/go", {1});
          c.wait(b + "/go");
        }
        break;
    }
    secs[phase] = std::chrono::duration<double>(clock::now() - t0).count();
  }
  sync(c, cfg.clients, "end");
  if (c.add("counter", 0) != int64_t(cfg.clients) * cfg.ops) {
    std::fprintf(stderr, "client %d: counter total is wrong\n", id);
    std::_Exit(4);
  }
  return secs;
}

// Forks the clients (the server already runs in this process), gathers and prints results.
inline int run(const Factory& make, Config cfg) {
  if (cfg.ops <= 0) cfg.ops = std::max(200, 20000 / cfg.clients);
  if (cfg.rounds <= 0) cfg.rounds = std::max(50, 2000 / cfg.clients);
  int fds[2];
  if (::pipe(fds) != 0) return 1;
  std::vector<pid_t> pids;
  for (int i = 0; i < cfg.clients; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      int code = 0;
      try {
        auto client = make();
        auto secs = run_client(*client, i, cfg);
        if (::write(fds[1], secs.data(), sizeof(double) * kPhases) != sizeof(double) * kPhases) code = 5;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "client %d: %s\n", i, e.what());
        code = 2;
      }
      std::_Exit(code);  // no destructors: the parent owns the server
    }
    pids.push_back(pid);
  }
  ::close(fds[1]);
  std::vector<std::vector<double>> all;
  for (;;) {
    std::vector<double> secs(kPhases);
    ssize_t n = ::read(fds[0], secs.data(), sizeof(double) * kPhases);
    if (n != static_cast<ssize_t>(sizeof(double) * kPhases)) break;
    all.push_back(secs);
  }
  ::close(fds[0]);
  int failed = 0;
  for (pid_t p : pids) {
    int st = 0;
    ::waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) ++failed;
  }
  if (failed || static_cast<int>(all.size()) != cfg.clients) {
    std::fprintf(stderr, "%d client(s) failed\n", failed);
    return 1;
  }
  for (int ph = 0; ph < kPhases; ++ph) {
    double slowest = 0, sum = 0;
    for (const auto& s : all) {
      slowest = std::max(slowest, s[ph]);
      sum += s[ph];
    }
    double count = ph == 3 ? cfg.rounds : cfg.ops;
    double total = ph == 3 ? cfg.rounds : count * cfg.clients;
    std::printf("RESULT impl=%s clients=%d op=%s ops_per_s=%.0f us_per_op=%.1f\n", cfg.impl.c_str(),
                cfg.clients, kPhaseNames[ph], total / slowest, sum / cfg.clients / count * 1e6);
  }
  std::fflush(stdout);
  return 0;
}

inline Config parse_args(int argc, char** argv, std::string impl) {
  Config c;
  c.impl = std::move(impl);
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    int v = std::atoi(argv[i + 1]);
    if (a == "--clients") c.clients = v;
    else if (a == "--ops") c.ops = v;
    else if (a == "--rounds") c.rounds = v;
  }
  return c;
}

}  // namespace bench
