// ProcessGroup::Impl: a group's identity (store prefix, members, locality), its backend and its
// ordered work queue. Every operation is validated in the caller's thread, numbered, and either
// queued or, for a blocking call on an idle group, run in the caller's thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "group/observe/flight_recorder.hpp"
#include "group/observe/observer.hpp"
#include "device/device_completion.hpp"
#include "group/work_queue.hpp"
#include "spmd/process_group.hpp"

namespace spmd {

// Set by the blocking forms around their *_async call: the caller waits right away, so the
// call may run in the caller's thread. Taken (cleared) by the first Impl::call it reaches.
class SyncIntent {
 public:
  SyncIntent() { flag() = true; }
  ~SyncIntent() { flag() = false; }
  SyncIntent(const SyncIntent&) = delete;
  SyncIntent& operator=(const SyncIntent&) = delete;
  static bool take() {
    bool f = flag();
    flag() = false;
    return f;
  }

 private:
  static bool& flag() {
    thread_local bool f = false;
    return f;
  }
};

struct ProcessGroup::Impl {
  // `ranks[i]` is the world rank of group rank i; `rank` is ours in the group. Agrees with
  // the other members on the group through the store (group_agreement.hpp); `what` names the
  // group in those messages. `world_observer` is the observer of the world a subgroup is made
  // from (null for a world, which makes its own).
  Impl(std::shared_ptr<Store> store, std::string prefix, int rank, std::vector<int> ranks, GroupOptions options,
       const std::string& what, std::shared_ptr<observe::Observer> world_observer = nullptr);
  ~Impl();

  std::shared_ptr<Store> store;
  std::string prefix;  // unique store prefix; also the group's name in messages
  int rank;
  std::vector<int> ranks;
  GroupOptions options;
  Locality locality;
  std::unique_ptr<Backend> backend;
  bool serves_cpu = false;  // backend->serves(DeviceType::CPU), asked once
  std::shared_ptr<observe::Observer> observer;         // the world's: heartbeat, dumps, trace
  std::shared_ptr<observe::FlightRecorder> recorder;  // this group's calls; null when off

  // Held while a call is numbered and queued (WorkQueue::reserve + push), so the queue's order
  // is the number order; an inline call takes its number without it (WorkQueue::claim_inline).
  std::mutex issue_mutex;
  uint64_t children = 0;   // groups created from this one (names the child's prefix)
  uint64_t monitored = 0;  // monitored barriers issued (names their store keys)
  std::unique_ptr<WorkQueue> queue;

  int size() const { return static_cast<int>(ranks.size()); }
  // Group rank of a world rank given by the caller as `role` (e.g. "root") of `what`.
  int group_rank_of(int global, const std::string& what, const char* role) const;
  // The call's context; its deadline runs from `now`, the clock read its record also took.
  OpContext context(const CallSignature& sig, uint64_t seq, bool p2p, Deadline::Clock::time_point now) const;

  // Issues a collective numbered in this group's sequence: queued, or — when the caller will
  // wait for it (a blocking form, see SyncIntent) and nothing else is queued — run right now
  // in the caller's thread, which returns an already completed Work.
  template <typename Body>
  Work call(const CallSignature& sig, Body&& body) {
    if (SyncIntent::take())
      if (auto seq = queue->claim_inline(true)) {
        std::shared_ptr<DeviceCompletion> device;
        run_inline(sig, *seq, false, [&](Deadline::Clock::time_point now) {
          OpContext c = context(sig, *seq, false, now);
          c.completion = &device;
          body(c);
        });
        return device ? completed(-1, std::move(device)) : Work::completed();
      }
    return submit(sig, std::function<void(const OpContext&)>(std::forward<Body>(body)));
  }
  // Point-to-point work; `body` returns the peer's group rank (for source_rank()).
  template <typename Body>
  std::vector<Work> call_p2p(const CallSignature& sig, size_t works, Body&& body) {
    if (SyncIntent::take() && works == 1 && queue->claim_inline(false)) {
      int peer = -1;
      std::shared_ptr<DeviceCompletion> device;
      run_inline(sig, 0, true, [&](Deadline::Clock::time_point now) {
        OpContext c = context(sig, 0, true, now);
        c.completion = &device;
        peer = body(c);
      });
      return {completed(peer >= 0 ? ranks[static_cast<size_t>(peer)] : -1, std::move(device))};
    }
    return submit_p2p(sig, works, std::function<int(const OpContext&)>(std::forward<Body>(body)));
  }

  // InvalidArgument for a view this group cannot take (null data, unknown dtype, a device
  // no backend of the group serves); raised in the caller's thread, before the call is numbered.
  void check_view(const TensorView& t, const std::string& what, const char* name = "tensor") const {
    // The common case (a CPU buffer of a known dtype on a group that serves CPU memory) is
    // decided here, on the latency path; the rest says what is wrong.
    if (serves_cpu && t.device.type == DeviceType::CPU && static_cast<unsigned>(t.dtype) <= static_cast<unsigned>(DType::I64) &&
        (t.data != nullptr || t.count == 0))
      return;
    check_view_slow(t, what, name);
  }

 private:
  void check_view_slow(const TensorView& t, const std::string& what, const char* name) const;
  Work submit(const CallSignature& sig, std::function<void(const OpContext&)> body);
  std::vector<Work> submit_p2p(const CallSignature& sig, size_t works, std::function<int(const OpContext&)> body);
  // An already finished Work (an inline call), with the device part of it if there is one.
  static Work completed(int source_rank, std::shared_ptr<DeviceCompletion> device);
  // Runs a call in this thread under the flight recorder (whose record is closed, completed
  // or failed, before a failure is handled).
  template <typename F>
  void run_inline(const CallSignature& sig, uint64_t seq, bool p2p, F&& run) {
    try {
      const auto now = Deadline::Clock::now();
      observe::CallScope scope(recorder.get(), sig, seq, p2p, now);
      run(now);
      scope.done();
    } catch (...) {
      on_failure(std::current_exception());
      queue->release_inline();
      throw;
    }
    queue->release_inline();
  }
  void on_failure(std::exception_ptr e);
};

void check_dtype(DType t, const std::string& what);

}  // namespace spmd
