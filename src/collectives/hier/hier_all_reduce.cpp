// Hierarchical all_reduce for groups spanning hosts: each host reduces to its leader through
// shared memory, the leaders all-reduce over TCP (the cost model's cheapest algorithm for the
// size and the number of hosts), and each leader broadcasts the result to its host through
// shared memory. Inter-host traffic is one vector per host instead of one per rank.
//
// Pipelined in chunks (from 256 KiB, as many as the cost model prices best): the leader's
// inter-host phase runs on a thread of its own, chunk after chunk as the host finishes reducing
// it, while the host reduces the next chunk and broadcasts the previous one, so the network does
// not wait for the local phases (3 x 2 ranks over 1 Gbit/s, 16 MiB: they cost ~15 ms of ~200
// unpipelined). Every rank of a host runs the local phases in the same order: reduce 0,
// reduce 1, broadcast 0, reduce 2, broadcast 1, ..., broadcast K-1.
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "collectives/cost_model.hpp"
#include "collectives/hier/hier_common.hpp"

namespace spmd::algo {

namespace {

void leaders_all_reduce(AlgoContext& c, const OpContext& op, TensorView data, ReduceFn fn) {
  SubTransport leaders(c.net, c.loc.leaders());
  std::string_view among =
      cheapest_among_hosts(Collective::AllReduce, data.bytes(), leaders.size(), model_or_default(c.model));
  if (among == "recursive_doubling")
    allreduce_recursive_doubling(leaders, op, data, fn);
  else if (among == "halving_doubling")
    allreduce_halving_doubling(leaders, op, data, fn);
  else
    allreduce_ring(leaders, op, data, fn);
}

// The leader's inter-host thread: all-reduces chunk k once the host has reduced it. Errors are
// kept for the calling thread, which rethrows them when it next waits for a chunk.
class LeadersThread {
 public:
  LeadersThread(AlgoContext& c, const CollArgs& a, int chunks) : c_(c), a_(a), chunks_(chunks) {
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
  void reduced(int k) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      reduced_ = k + 1;
    }
    changed_.notify_all();
  }
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
          changed_.wait(lock, [&] { return reduced_ > k || abandoned_; });
          if (abandoned_) return;
        }
        leaders_all_reduce(c_, c_.op, hier::chunk_of(a_.data, chunks_, k), a_.fn);
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

  AlgoContext& c_;
  const CollArgs& a_;
  const int chunks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  int reduced_ = 0, done_ = 0;
  bool abandoned_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace

void hier_all_reduce(AlgoContext& c, const CollArgs& a) {
  const Layout layout{static_cast<int>(c.loc.hosts.size()), c.loc.max_ranks_per_host()};
  const int chunks = hier_all_reduce_chunks(a.data.bytes(), a.data.count, layout, model_or_default(c.model));
  if (chunks == 1) {
    hier::host_reduce(c, 1, a.data, 0, a.fn);
    if (c.loc.is_leader()) leaders_all_reduce(c, c.op, a.data, a.fn);
    hier::host_broadcast(c, 2, a.data, 0);
    return;
  }
  std::optional<LeadersThread> leaders;
  if (c.loc.is_leader()) leaders.emplace(c, a, chunks);
  auto phase = [](int k, int which) { return static_cast<uint16_t>(1 + 2 * k + which); };
  for (int k = 0; k <= chunks; ++k) {
    if (k < chunks) {
      hier::host_reduce(c, phase(k, 0), hier::chunk_of(a.data, chunks, k), 0, a.fn);
      if (leaders) leaders->reduced(k);
    }
    if (k > 0) {
      if (leaders) leaders->wait_done(k - 1);
      hier::host_broadcast(c, phase(k - 1, 1), hier::chunk_of(a.data, chunks, k - 1), 0);
    }
  }
}

}  // namespace spmd::algo
