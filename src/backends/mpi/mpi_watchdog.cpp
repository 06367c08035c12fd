// The mpi backend's watchdog (mpi_watchdog.hpp).
#include "backends/mpi/mpi_watchdog.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "common/error_text.hpp"
#include "common/log.hpp"

namespace spmd::mpi {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Deadline::Clock::now().time_since_epoch()).count();
}
int64_t ns_of(const Deadline& d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d.time_point().time_since_epoch()).count();
}

// How often the watchdog looks: a deadline is noticed at most this late.
constexpr auto kTick = std::chrono::milliseconds(100);

class Watchdog {
 public:
  struct Entry {
    InFlight* slot;
    std::string group;
    Api* api;
    Comm* comm;
  };
  // Never destroyed: groups may outlive static destruction (a world never destroyed), and
  // the thread only sleeps between looks.
  static Watchdog& instance() {
    static Watchdog* w = new Watchdog();
    return *w;
  }
  void add(Entry e) {
    std::lock_guard<std::mutex> g(m_);
    entries_.push_back(std::move(e));
    if (!started_) {
      started_ = true;
      std::thread([this] { loop(); }).detach();
    }
  }
  void remove(InFlight* slot) {
    std::lock_guard<std::mutex> g(m_);
    for (size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].slot == slot) {
        entries_.erase(entries_.begin() + static_cast<long>(i));
        return;
      }
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait_for(lock, kTick);
      const int64_t now = now_ns();
      for (const Entry& e : entries_) {
        std::string call = e.slot->overdue(now);
        if (call.empty()) continue;
        log::write(log::Level::Warn,
                   "spmd Timeout: group " + e.group + " (mpi backend): " + call +
                       "; a peer never made this call, or is stuck before it. MPI cannot cancel a call it started, "
                       "so this ends the job (MPI_Abort, exit status " + std::to_string(kTimeoutExitCode) +
                       "). Raise SPMD_TIMEOUT if the call is just slow.");
        e.api->abort(*e.comm, kTimeoutExitCode);
      }
    }
  }

  std::mutex m_;
  std::condition_variable cv_;  // only times out: nobody needs to wake the watchdog early
  std::vector<Entry> entries_;
  bool started_ = false;
};

}  // namespace

void InFlight::begin(const OpContext& op) noexcept {
  sig_bits_.store(static_cast<uint64_t>(op.sig.collective) | uint64_t(op.sig.dtype) << 8 | uint64_t(op.sig.op) << 16 |
                      uint64_t(op.p2p) << 24 | uint64_t(static_cast<uint32_t>(op.sig.root)) << 32,
                  std::memory_order_relaxed);
  count_.store(op.sig.count, std::memory_order_relaxed);
  seq_.store(op.seq, std::memory_order_relaxed);
  timeout_ms_.store(op.timeout.count(), std::memory_order_relaxed);
  step_.store(nullptr, std::memory_order_relaxed);
  deadline_ns_.store(ns_of(op.deadline), std::memory_order_release);
}

void InFlight::begin_step(const char* what, Deadline deadline) noexcept {
  step_.store(what, std::memory_order_relaxed);
  timeout_ms_.store(deadline.remaining().count(), std::memory_order_relaxed);
  deadline_ns_.store(ns_of(deadline), std::memory_order_release);
}

std::string InFlight::overdue(int64_t now) const {
  const int64_t deadline = deadline_ns_.load(std::memory_order_acquire);
  if (deadline == 0 || now < deadline) return "";
  const auto timeout = std::chrono::milliseconds(timeout_ms_.load(std::memory_order_relaxed));
  if (const char* step = step_.load(std::memory_order_relaxed))
    return std::string(step) + " did not finish within " + seconds_text(timeout) + " s";
  const uint64_t bits = sig_bits_.load(std::memory_order_relaxed);
  CallSignature sig;
  sig.collective = static_cast<Collective>(bits & 0xff);
  sig.dtype = static_cast<DType>((bits >> 8) & 0xff);
  sig.op = static_cast<ReduceOp>((bits >> 16) & 0xff);
  sig.root = static_cast<int32_t>(static_cast<uint32_t>(bits >> 32));
  sig.count = count_.load(std::memory_order_relaxed);
  const bool p2p = (bits >> 24) & 1;
  return describe(sig) + (p2p ? "" : " (call #" + std::to_string(seq_.load(std::memory_order_relaxed)) + ")") +
         " did not finish within " + seconds_text(timeout) + " s";
}

WatchdogRegistration::WatchdogRegistration(InFlight* slot, std::string group, Api* api, Comm* comm) : slot_(slot) {
  Watchdog::instance().add({slot, std::move(group), api, comm});
}

WatchdogRegistration::~WatchdogRegistration() { Watchdog::instance().remove(slot_); }

}  // namespace spmd::mpi
