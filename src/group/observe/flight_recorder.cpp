#include "group/observe/flight_recorder.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>
#include <optional>

#include "common/env.hpp"

namespace spmd::observe {

namespace {

constexpr size_t kDefaultCapacity = 256;


}  // namespace

// --- records ---

const char* state_name(CallState s) {
  switch (s) {
    case CallState::Queued: return "queued";
    case CallState::Running: return "running";
    case CallState::Completed: return "completed";
    case CallState::Failed: return "failed";
  }
  return "?";
}

std::string FlightRecord::title() const {
  // describe() gives "all_reduce(f32, 1024, Sum)": put the number after the name.
  CallSignature plain = sig;
  plain.algo = 0;
  std::string d = describe(plain);
  size_t paren = d.find('(');
  std::string number = " #" + std::to_string(seq);
  // Sends and receives share a signature (they are compared with each other): name neither.
  if (p2p) d = "p2p" + (paren == std::string::npos ? std::string() : d.substr(paren));
  paren = d.find('(');
  if (paren == std::string::npos) return d + number;
  std::string args = d.substr(paren);
  if (args == "()") args.clear();
  else args = " " + args;
  return d.substr(0, paren) + number + args;
}

uint64_t FlightRecord::bytes() const { return sig.count * dtype_size(sig.dtype); }

size_t recorder_capacity() {
  auto n = env::get_int("SPMD_FLIGHT_RECORDER");
  if (!n) return kDefaultCapacity;
  return static_cast<size_t>(std::clamp<int64_t>(*n, 0, 1 << 20));
}

FlightRecorder::FlightRecorder(std::string name, std::vector<int> ranks, size_t capacity, int track,
                               RecordSink* sink, void (*nudge)(void*), void* nudge_arg)
    : name_(std::move(name)),
      ranks_(std::move(ranks)),
      track_(track),
      sink_(sink),
      nudge_(nudge),
      nudge_arg_(nudge_arg),
      ring_(std::bit_ceil(std::max<size_t>(capacity, 1))),
      mask_(ring_.size() - 1),
      capacity_(std::max<size_t>(capacity, 1)) {}

uint64_t FlightRecorder::append(const CallSignature& sig, uint64_t seq, bool p2p, int64_t now) {
  uint64_t id = next_id_++;
  // Every field written, none zeroed twice: this runs on every call (the label only when set;
  // readers stop at its first NUL).
  FlightRecord& r = slot(id);
  r.id = id;
  r.seq = p2p ? p2p_count_++ : seq;
  r.p2p = p2p;
  r.sig = sig;
  r.state = CallState::Queued;
  r.waiting_on = -1;
  r.queued_ns = now;
  r.started_ns = r.ended_ns = r.wait_ns = 0;
  const char* label = TraceLabel::current();
  if (label[0] != '\0') std::memcpy(r.label, label, sizeof r.label);
  else r.label[0] = '\0';
  if (p2p) ++progress_.p2p_issued;
  else progress_.queued = static_cast<int64_t>(seq);
  return id;
}

FlightRecord* FlightRecorder::find(uint64_t id) {
  FlightRecord& r = slot(id);
  return r.id == id && id < next_id_ ? &r : nullptr;
}

uint64_t FlightRecorder::queued(const CallSignature& sig, uint64_t seq, bool p2p) {
  int64_t now = wall_ns();
  std::lock_guard<SpinLock> g(m_);
  return append(sig, seq, p2p, now);
}

void FlightRecorder::started(uint64_t id, uint64_t seq, bool p2p, int64_t now, ActiveCall& call) {
  call.id = id;
  call.seq = seq;
  call.p2p = p2p;
  call.started_ns = now;
  std::lock_guard<SpinLock> g(m_);
  if (!p2p) progress_.entered = static_cast<int64_t>(seq);
  if (FlightRecord* r = find(id)) {
    r->state = CallState::Running;
    r->started_ns = call.started_ns;
  }
}

void FlightRecorder::started_inline(const CallSignature& sig, uint64_t seq, bool p2p, int64_t now, ActiveCall& call) {
  call.seq = seq;
  call.p2p = p2p;
  call.started_ns = now;
  std::lock_guard<SpinLock> g(m_);
  call.id = append(sig, seq, p2p, call.started_ns);
  FlightRecord& r = slot(call.id);
  r.state = CallState::Running;
  r.started_ns = call.started_ns;
  if (!p2p) progress_.entered = static_cast<int64_t>(seq);
}

void FlightRecorder::finished(const ActiveCall& call, bool failed) {
  const int64_t now = wall_ns();
  auto close = [&]() -> FlightRecord* {
    if (call.p2p) ++progress_.p2p_finished;
    else if (!failed) progress_.completed = static_cast<int64_t>(call.seq);
    progress_.failed = progress_.failed || failed;
    FlightRecord* r = find(call.id);
    if (r != nullptr) {
      r->state = failed ? CallState::Failed : CallState::Completed;
      r->ended_ns = now;
      r->sig.algo = call.algo;
      r->wait_ns = call.wait_ns;
      r->waiting_on = failed ? call.waiting_on : -1;  // what it last waited for, kept for the dump
    }
    return r;
  };
  if (sink_ == nullptr) {  // the latency path: no copy of the record
    std::lock_guard<SpinLock> g(m_);
    close();
    return;
  }
  std::optional<FlightRecord> copy;  // for the sink, outside the lock
  {
    std::lock_guard<SpinLock> g(m_);
    if (FlightRecord* r = close()) copy = *r;
  }
  if (copy) sink_->add(*copy, track_, name_);
}

void FlightRecorder::publish_wait(const ActiveCall& call) {
  {
    std::lock_guard<SpinLock> g(m_);
    if (FlightRecord* r = find(call.id)) {
      r->waiting_on = call.waiting_on;
      r->sig.algo = call.algo;
      r->wait_ns = call.wait_ns;
    }
  }
  if (nudge_ != nullptr) nudge_(nudge_arg_);
}

GroupProgress FlightRecorder::progress() const {
  std::lock_guard<SpinLock> g(m_);
  return progress_;
}

std::vector<FlightRecord> FlightRecorder::records(size_t last, GroupProgress* progress) const {
  std::lock_guard<SpinLock> g(m_);
  if (progress != nullptr) *progress = progress_;
  uint64_t n = std::min<uint64_t>({last, next_id_, capacity_});
  std::vector<FlightRecord> out;
  out.reserve(n);
  for (uint64_t id = next_id_ - n; id < next_id_; ++id) out.push_back(slot(id));
  return out;
}

std::vector<FlightRecord> FlightRecorder::open_records(GroupProgress* progress) const {
  std::lock_guard<SpinLock> g(m_);
  if (progress != nullptr) *progress = progress_;
  std::vector<FlightRecord> out;
  uint64_t n = std::min<uint64_t>(next_id_, capacity_);
  // Newest first until the last finished record: the open calls are the newest ones.
  for (uint64_t k = 0; k < n; ++k) {
    const FlightRecord& r = slot(next_id_ - 1 - k);
    out.push_back(r);
    if (r.finished()) break;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

// --- CallScope ---

ActiveCall& CallScope::enter() {
  call_.recorder = rec_;
  call_.outer = active_call();
  active_call() = &call_;
  return call_;
}

void CallScope::leave() {
  active_call() = call_.outer;
  rec_->finished(call_, !done_);
}

}  // namespace spmd::observe
