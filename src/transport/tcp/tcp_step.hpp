// One TcpTransport::run() in progress (tcp_transport.hpp): its parts, the pairs they go over
// as their connections come, what each receive has read, and the poll set it blocks on.
// Private to the TCP transport (tcp_transport.cpp, tcp_step.cpp).
#pragma once

#include <poll.h>

#include <algorithm>
#include <span>
#include <vector>

#include "transport/tcp/tcp_transport.hpp"

namespace spmd::tcp {

struct TcpTransport::RecvState {
  TcpPair* pair = nullptr;
  char* scratch = nullptr;  // sink mode: chunk buffer
  size_t carry = 0;         // sink mode: bytes at the front of scratch not yet handed to the sink
  // A Remote frame: where the payload is, and the ack we owe once it is read.
  bool remote = false;
  int32_t remote_pid = 0;
  uint64_t remote_address = 0;
  uint64_t token_address = 0;  // the sender's "still in this send" word, and its value
  uint64_t token = 0;
  uint64_t seq = 0;
  bool ack_owed = false;
};

// The fds a blocked step waits on, one entry per fd (events merged).
class PollSet {
 public:
  void clear() { fds_.clear(); }
  void watch(int fd, short events) {
    for (pollfd& p : fds_)
      if (p.fd == fd) {
        p.events |= events;
        return;
      }
    fds_.push_back({fd, events, 0});
  }
  std::vector<pollfd>& fds() { return fds_; }

 private:
  std::vector<pollfd> fds_;
};

struct TcpTransport::Step {
  Step(std::span<SendPart> s, std::span<RecvPart> r)
      : sends(s), recvs(r), headers(s.size()), states(r.size()), send_pairs(s.size()) {}

  std::span<SendPart> sends;
  std::span<RecvPart> recvs;
  std::vector<FrameHeader> headers;  // per send, made when its pair is known
  std::vector<RecvState> states;     // per receive
  std::vector<TcpPair*> send_pairs;  // per send; null until its connection is there
  std::vector<TcpPair*> touched;     // every pair of this step: acks may be owed or awaited on any
  size_t sinks = 0;                  // sink receives given a chunk buffer so far
  bool resolved = false;             // every part has its pair
  bool meshed = false;               // connected to every higher rank (see block())
  PollSet poll;
  size_t step_fds = 0;  // poll's first entries are the step's own; then the abort watch's
  Deadline::Clock::time_point start = Deadline::Clock::now();
  Deadline::Clock::time_point blocked_since{};  // when this step first had to wait

  void touch(TcpPair* p) {
    if (std::find(touched.begin(), touched.end(), p) == touched.end()) touched.push_back(p);
  }
  bool recv_done(size_t i) const {
    return recvs[i].header_done && recvs[i].received == recvs[i].bytes && states[i].carry == 0 && !states[i].ack_owed;
  }
  bool send_done(size_t i) const { return sends[i].header_sent == sizeof(FrameHeader) && sends[i].sent == sends[i].bytes; }
};

}  // namespace spmd::tcp
