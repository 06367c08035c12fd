// The call probes' state and slow paths (call_probe.hpp): the clock offset, this thread's
// running call and label, and a wait's bookkeeping.
#include "call/call_probe.hpp"

#include <time.h>

#include <cstring>

namespace spmd::observe {

namespace {

thread_local char t_label[32] = {};

}  // namespace

const int64_t kSteadyToWallNs = [] {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const auto steady = std::chrono::steady_clock::now().time_since_epoch();
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec - std::chrono::duration_cast<std::chrono::nanoseconds>(steady).count();
}();

constinit thread_local ActiveCall* t_active_call = nullptr;

// --- WaitScope, TraceLabel (call_probe.hpp) ---

void WaitScope::begin(int peer, Clock::time_point since) {
  start_ = Clock::now();
  since_ = since;
  if (since == Clock::time_point{}) {  // a new wait, not the next slice of one
    since_ = start_;
    call_->published = false;
  }
  if (peer >= 0 && peer != call_->waiting_on) {
    call_->waiting_on = peer;
    call_->published = false;
  }
}

void WaitScope::end() {
  call_->wait_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start_).count();
}

void WaitScope::blocking_slow(int peer) {
  if (peer >= 0 && peer != call_->waiting_on) {
    call_->waiting_on = peer;
    call_->published = false;
  }
  if (call_->published || Clock::now() - since_ < kPublishAfter) return;
  call_->published = true;
  call_->recorder->publish_wait(*call_);
}

TraceLabel::TraceLabel(const char* text) {
  std::memcpy(saved_, t_label, sizeof saved_);
  std::strncpy(t_label, text, sizeof t_label - 1);
  t_label[sizeof t_label - 1] = '\0';
}

TraceLabel::~TraceLabel() { std::memcpy(t_label, saved_, sizeof saved_); }

const char* TraceLabel::current() { return t_label; }

}  // namespace spmd::observe
