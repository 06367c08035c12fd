// The hierarchical algorithms' pipeline (hier_all_reduce.cpp, hier_reduce_scatter.cpp): the
// data in chunks, the leader's phase among hosts on a thread of its own, chunk after chunk as
// the host finishes its local phase before it, while the host runs the local phases of the
// chunks around it, so the network does not wait for them.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "collectives/algorithm.hpp"
#include "collectives/cost_model.hpp"

namespace spmd::algo::hier {

// The chunk count the cost model gives hier `coll` in this group (cost_model.hpp, hier_chunks,
// says what `bytes` and `count` are per collective).
inline int chunks_of(const AlgoContext& c, Collective coll, size_t bytes, size_t count) {
  const Layout layout{static_cast<int>(c.loc.hosts.size()), c.loc.max_ranks_per_host()};
  return hier_chunks(coll, bytes, count, layout, model_or_default(c.model));
}

// The leader's inter-host thread: runs among_hosts(k) for chunk k once ready(k) was called.
// Errors are kept for the calling thread, which rethrows them when it next waits for a chunk.
class LeadersThread {
 public:
  LeadersThread(int chunks, std::function<void(int)> among_hosts)
      : chunks_(chunks), among_hosts_(std::move(among_hosts)) {
    thread_ = std::thread([this] { run(); });
  }
  ~LeadersThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      abandoned_ = true;  // the caller unwinds: take no further chunk
    }
    changed_.notify_all();
    thread_.join();
  }
  LeadersThread(const LeadersThread&) = delete;
  LeadersThread& operator=(const LeadersThread&) = delete;

  // The host's local phase before chunk k's phase among hosts is done.
  void ready(int k) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_ = k + 1;
    }
    changed_.notify_all();
  }
  // Waits until chunk k's phase among hosts is done.
  void wait_done(int k) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return done_ > k || error_; });
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void run() {
    try {
      for (int k = 0; k < chunks_; ++k) {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          changed_.wait(lock, [&] { return ready_ > k || abandoned_; });
          if (abandoned_) return;
        }
        among_hosts_(k);
        {
          std::lock_guard<std::mutex> lock(mutex_);
          done_ = k + 1;
        }
        changed_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      changed_.notify_all();
    }
  }

  const int chunks_;
  std::function<void(int)> among_hosts_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int ready_ = 0, done_ = 0;
  bool abandoned_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

// Runs `chunks` chunks through before(k) (every member), among_hosts(k) (the leader, on its
// thread) and after(k) (every member), in one order on every member of a host: before 0,
// before 1, after 0, before 2, after 1, ..., after K-1. One chunk runs on the calling thread.
template <typename Before, typename After>
void pipeline(bool leader, int chunks, Before&& before, std::function<void(int)> among_hosts, After&& after) {
  if (chunks == 1) {
    before(0);
    if (leader) among_hosts(0);
    after(0);
    return;
  }
  std::optional<LeadersThread> leaders;
  if (leader) leaders.emplace(chunks, std::move(among_hosts));
  for (int k = 0; k <= chunks; ++k) {
    if (k < chunks) {
      before(k);
      if (leaders) leaders->ready(k);
    }
    if (k > 0) {
      if (leaders) leaders->wait_done(k - 1);
      after(k - 1);
    }
  }
}

}  // namespace spmd::algo::hier
