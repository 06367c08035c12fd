#include "group/observe/monitor.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>
#include <thread>
#include <vector>

#include "common/log.hpp"
#include "group/observe/observer.hpp"

namespace spmd::observe {

namespace {

constexpr int kTickMs = 1000;

std::atomic<bool> g_signalled{false};
std::atomic<int> g_wake_fd{-1};  // never closed: the signal handler may write to it at any time

void on_sigusr1(int) {
  int saved = errno;
  g_signalled.store(true, std::memory_order_relaxed);
  uint64_t one = 1;
  ssize_t w = ::write(g_wake_fd.load(std::memory_order_relaxed), &one, sizeof one);
  (void)w;
  errno = saved;
}

class Monitor {
 public:
  Monitor() {
    g_wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (g_wake_fd.load() < 0) {
      SPMD_LOG(Warn) << "flight recorder: no eventfd (errno " << errno << "); no heartbeats or SIGUSR1 dumps";
      return;
    }
    struct sigaction old {};
    if (::sigaction(SIGUSR1, nullptr, &old) == 0 && !(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_DFL) {
      struct sigaction sa {};
      sa.sa_handler = on_sigusr1;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESTART;
      ::sigaction(SIGUSR1, &sa, nullptr);
    }
    // Detached and never stopped: observers come and go with worlds, and at exit the thread
    // must not be joined while static objects are being destroyed.
    std::thread([this] { loop(); }).detach();
  }

  void add(const std::shared_ptr<Observer>& o) {
    {
      std::lock_guard<std::mutex> g(m_);
      observers_.push_back(o);
    }
    nudge();
  }

 private:
  void loop() {
    std::vector<std::shared_ptr<Observer>> live;
    for (;;) {
      bool idle;
      {
        std::lock_guard<std::mutex> g(m_);
        idle = observers_.empty();
      }
      pollfd p{g_wake_fd.load(), POLLIN, 0};
      ::poll(&p, 1, idle ? -1 : kTickMs);
      uint64_t count;
      ssize_t r = ::read(p.fd, &count, sizeof count);
      (void)r;
      bool signalled = g_signalled.exchange(false, std::memory_order_relaxed);
      {
        std::lock_guard<std::mutex> g(m_);
        std::erase_if(observers_, [](const std::weak_ptr<Observer>& w) { return w.expired(); });
        for (auto& w : observers_)
          if (auto o = w.lock()) live.push_back(std::move(o));
      }
      for (auto& o : live) o->tick(signalled);
      live.clear();  // may end an observer whose world is gone meanwhile
    }
  }

  std::mutex m_;
  std::vector<std::weak_ptr<Observer>> observers_;
};

Monitor& instance() {
  static Monitor* m = new Monitor;  // never destroyed (see the thread above)
  return *m;
}

}  // namespace

void monitor(const std::shared_ptr<Observer>& o) { instance().add(o); }

void nudge() {
  int fd = g_wake_fd.load(std::memory_order_relaxed);
  if (fd < 0) return;
  uint64_t one = 1;
  ssize_t w = ::write(fd, &one, sizeof one);
  (void)w;
}

}  // namespace spmd::observe
