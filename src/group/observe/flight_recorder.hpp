// The flight recorder of one group: the last N calls of this rank in the group (a ring, N =
// SPMD_FLIGHT_RECORDER, default 256; 0 turns recording off), each with its call number,
// signature, algorithm, the peer it blocked on, and when it was queued, started and ended.
// The group's call path (group_impl.hpp) writes it, for inline and queued calls alike, so
// every backend gets it. One lock guards the ring: the writers are the group's callers and
// its worker, which already run one call at a time, and the only other taker is the observer
// thread about once a second, so the lock is uncontended (a SpinLock: one atomic exchange per
// call on the latency path). docs/observability.md shows a dump.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/spin_lock.hpp"
#include "call/call.hpp"
#include "call/call_probe.hpp"

namespace spmd::observe {

enum class CallState : uint8_t { Queued, Running, Completed, Failed };
const char* state_name(CallState s);

struct FlightRecord {
  uint64_t id = 0;    // position in the group's history on this rank (0, 1, ...)
  uint64_t seq = 0;   // the group's call number; point-to-point calls count on their own
  bool p2p = false;
  CallSignature sig;  // sig.algo: the backend's choice, once it made it
  CallState state = CallState::Queued;
  int32_t waiting_on = -1;  // global rank of the peer it blocked on for long (-1: none known)
  int64_t queued_ns = 0, started_ns = 0, ended_ns = 0;  // wall clock (wall_ns); 0 = not yet
  int64_t wait_ns = 0;      // time blocked on peers (what the transport could tell)
  char label[32] = {};      // TraceLabel at issue time ("ddp bucket 3")

  bool finished() const { return state == CallState::Completed || state == CallState::Failed; }
  // "all_reduce #2 (f32, 1024, Sum)", "p2p #0 (f32, 8, tag 7)" (without the algorithm)
  std::string title() const;
  uint64_t bytes() const;  // sig.count elements of sig.dtype
};

// What the group's calls have reached on this rank. Call numbers; -1 = none yet.
struct GroupProgress {
  int64_t queued = -1;     // the last collective issued
  int64_t entered = -1;    // the last collective that started to run
  int64_t completed = -1;  // the last collective that returned normally
  uint64_t p2p_issued = 0, p2p_finished = 0;
  bool failed = false;     // a call of the group failed (the group is then unusable)
  // Calls issued and not returned normally: a failed group stays busy.
  bool busy() const { return queued > completed || p2p_issued > p2p_finished; }
  bool operator==(const GroupProgress&) const = default;
};

// Receives every finished record (the trace writer).
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void add(const FlightRecord& r, int track, const std::string& group) = 0;
};

class FlightRecorder final : public WaitListener {
 public:
  // `name` is the group's store prefix; `ranks` its members (global ranks); `track` numbers
  // the group among this rank's groups (the trace's row within the rank). `sink` may be null.
  FlightRecorder(std::string name, std::vector<int> ranks, size_t capacity, int track, RecordSink* sink,
                 void (*nudge)(void*), void* nudge_arg);

  // A call issued to the queue (under the group's issue lock, so in number order).
  uint64_t queued(const CallSignature& sig, uint64_t seq, bool p2p);
  // The queued call `id` starts to run in this thread / a call runs inline right away, at
  // `now` (wall_ns).
  void started(uint64_t id, uint64_t seq, bool p2p, int64_t now, ActiveCall& call);
  void started_inline(const CallSignature& sig, uint64_t seq, bool p2p, int64_t now, ActiveCall& call);
  void finished(const ActiveCall& call, bool failed);
  // The running call has blocked on `call.waiting_on` for a while (WaitScope).
  void publish_wait(const ActiveCall& call) override;

  const std::string& name() const { return name_; }
  const std::vector<int>& ranks() const { return ranks_; }
  GroupProgress progress() const;
  // The last `last` records, oldest first, with the progress they belong to.
  std::vector<FlightRecord> records(size_t last, GroupProgress* progress = nullptr) const;
  // Records not finished, plus the last finished one (what a heartbeat carries).
  std::vector<FlightRecord> open_records(GroupProgress* progress = nullptr) const;

 private:
  // The ring's size is a power of two (a mask, not a division, on every call); it keeps at
  // least `capacity_` records, and reports that many.
  FlightRecord& slot(uint64_t id) { return ring_[id & mask_]; }
  const FlightRecord& slot(uint64_t id) const { return ring_[id & mask_]; }
  FlightRecord* find(uint64_t id);  // null once the ring moved past it
  uint64_t append(const CallSignature& sig, uint64_t seq, bool p2p, int64_t now);

  const std::string name_;
  const std::vector<int> ranks_;
  const int track_;
  RecordSink* const sink_;
  void (*const nudge_)(void*);
  void* const nudge_arg_;
  mutable SpinLock m_;
  std::vector<FlightRecord> ring_;
  uint64_t mask_ = 0;
  uint64_t capacity_ = 1;
  uint64_t next_id_ = 0;
  uint64_t p2p_count_ = 0;
  GroupProgress progress_;
};

// SPMD_FLIGHT_RECORDER: records kept per group (default 256; 0 = off).
size_t recorder_capacity();

// Runs one call under the recorder: `CallScope scope(recorder, id, seq, p2p, now)` for a
// queued call, `CallScope scope(recorder, sig, seq, p2p, now)` for one that runs inline (`now`:
// the clock read that also starts the call's deadline); done() when it returned, else the
// destructor records a failure. A null recorder records nothing.
class CallScope {
 public:
  using Clock = std::chrono::steady_clock;
  CallScope(FlightRecorder* r, uint64_t id, uint64_t seq, bool p2p, Clock::time_point now = Clock::now()) : rec_(r) {
    if (rec_ != nullptr) rec_->started(id, seq, p2p, wall_ns_at(now), enter());
  }
  CallScope(FlightRecorder* r, const CallSignature& sig, uint64_t seq, bool p2p, Clock::time_point now = Clock::now()) : rec_(r) {
    if (rec_ != nullptr) rec_->started_inline(sig, seq, p2p, wall_ns_at(now), enter());
  }
  ~CallScope() {
    if (rec_ != nullptr) leave();
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;
  void done() { done_ = true; }

 private:
  ActiveCall& enter();
  void leave();
  FlightRecorder* rec_;
  ActiveCall call_;
  bool done_ = false;
};

}  // namespace spmd::observe
