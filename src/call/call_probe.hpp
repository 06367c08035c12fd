// What the code below a group's call path tells the flight recorder about the call it runs:
// the algorithm the backend chose, and where the call blocks (the peer it waits on, for how
// long). The calling thread's running call is a thread-local pointer set by the group's flight
// recorder (group/observe/flight_recorder.hpp) around the backend call; with the recorder off
// it is null and every hook is one predictable branch. The recorder is above this layer: it
// listens through WaitListener, so transports and backends use these hooks without it.
// docs/observability.md describes the records.
#pragma once

#include <chrono>
#include <cstdint>

namespace spmd::observe {

struct ActiveCall;

// Who hears of a wait that has lasted long enough to report (the group's flight recorder).
class WaitListener {
 public:
  virtual void publish_wait(const ActiveCall& call) = 0;

 protected:
  ~WaitListener() = default;
};

// Nanoseconds on the wall clock, comparable between the ranks of a job: the monotonic clock
// anchored once to CLOCK_REALTIME. So one clock read serves a call's deadline and its record
// (each read costs ~25 ns, a tenth of a small shared-memory call), and durations never go
// negative when the wall clock is stepped while the job runs.
// The offset is read when the library loads (a static's initializer), so the conversion is an
// addition (~15 instructions less per timestamp than asking a function-local static).
extern const int64_t kSteadyToWallNs;
inline int64_t wall_ns_at(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count() + kSteadyToWallNs;
}
inline int64_t wall_ns() { return wall_ns_at(std::chrono::steady_clock::now()); }

// The call this thread is running, filled in while it runs and written into its record when
// it ends (or when it has blocked long enough to be worth reporting: publish_wait).
struct ActiveCall {
  WaitListener* recorder = nullptr;
  uint64_t id = 0;          // the record's id in its recorder
  uint64_t seq = 0;         // the call's number (collectives)
  bool p2p = false;
  int64_t started_ns = 0;
  uint16_t algo = 0;        // the backend's choice (CallSignature::algo)
  int32_t waiting_on = -1;  // global rank of the peer it last blocked on
  int64_t wait_ns = 0;      // time blocked on peers so far
  bool published = false;   // the current long wait is in the record already
  ActiveCall* outer = nullptr;
};

// This thread's running call, or null. Inline (a TLS load, no call): the recorder sets it
// around every call and the probes read it on every wait.
extern constinit thread_local ActiveCall* t_active_call;
inline ActiveCall*& active_call() { return t_active_call; }

// The backend chose algorithm `algo` for the running call.
inline void note_algorithm(uint16_t algo) {
  if (ActiveCall* a = active_call()) a->algo = algo;
}

// A wait for peers inside a call: created when the transport starts to block on `peer` (a
// global rank; -1 when it cannot tell), blocking() before each sleep or poll. Its time counts
// as waiting. A wait that has lasted kPublishAfter (counted from `since`, for a transport
// that waits in several slices) is written into the record and the heartbeat is nudged, so
// a dump or a hang report shows whom a stuck rank waits on.
class WaitScope {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kPublishAfter{50};
  explicit WaitScope(int peer, Clock::time_point since = {}) : call_(active_call()) {
    if (call_ != nullptr) begin(peer, since);
  }
  ~WaitScope() {
    if (call_ != nullptr) end();
  }
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;
  // About to sleep or poll; `peer` (when >= 0) is whom it now waits on.
  void blocking(int peer = -1) {
    if (call_ != nullptr) blocking_slow(peer);
  }

 private:
  void begin(int peer, Clock::time_point since);
  void end();
  void blocking_slow(int peer);
  ActiveCall* call_;
  Clock::time_point start_, since_;
};

// A label for the calls this thread issues while it lives ("ddp bucket 3"): kept in their
// records and shown in the trace. Nested labels replace the outer one until they end.
class TraceLabel {
 public:
  explicit TraceLabel(const char* text);
  ~TraceLabel();
  TraceLabel(const TraceLabel&) = delete;
  TraceLabel& operator=(const TraceLabel&) = delete;
  static const char* current();  // "" when none

 private:
  char saved_[32];
};

}  // namespace spmd::observe
