// ShmTransport: the Transport interface over the segment's pipes, one single-producer/single-
// consumer byte ring per ordered pair of local ranks. A message is a FrameHeader and its
// payload streamed through the ring, exactly as over a socket, so point-to-point operations
// and every TCP-style algorithm run between local ranks without the kernel: a sender copies
// in as far as the ring has room, a receiver copies out (or reduces straight from the ring
// into its output through a sink) and both ring each other's doorbell when the other may be
// asleep. Ranks are local indices (equal to group ranks when the group lives on one host).
#pragma once

#include <span>
#include <vector>

#include "transport/shm/shm_group.hpp"
#include "transport/transport.hpp"

namespace spmd::shm {

class ShmTransport final : public Transport {
 public:
  explicit ShmTransport(ShmGroup& group);
  // Pushes out what was sent eagerly before the group goes (while the receivers live).
  ~ShmTransport() override;

  // A blocking point-to-point send completes once its bytes are in the pipe or, when the pipe
  // is full, copied aside (up to this many bytes per peer, like a socket's send buffer): both
  // ranks may send before they receive. The copies go out while this rank waits on anything.
  static constexpr size_t kEagerBytes = 4 << 20;

  int rank() const override { return group_.rank(); }
  int size() const override { return group_.size(); }
  void run(std::span<SendPart> sends, std::span<RecvPart> recvs, const OpContext& op) override;
  int wait_any_sender(std::span<const int> peers, const OpContext& op) override;
  bool on_one_host(const OpContext&) override { return true; }
  void abort(ErrorKind kind, const std::string& message) noexcept override { group_.abort(kind, message); }

 private:
  struct RecvState {
    FrameHeader header;
    size_t header_got = 0;
    char carry[16];  // one element that straddles the ring's end, for sinks
  };
  bool progress_send(SendPart& s, FrameHeader& h);
  // Writes up to n bytes into the pipe to `peer`; returns how many fit.
  size_t write_some(int peer, const char* data, size_t n);
  bool flush_backlogs();
  void defer(SendPart& s, const FrameHeader& h);  // the rest of an eager send, copied aside
  bool progress_recv(RecvPart& r, RecvState& st, const OpContext& op);
  bool can_progress(std::span<SendPart> sends, std::span<RecvPart> recvs, std::span<RecvState> states) const;
  std::string missing(std::span<SendPart> sends, std::span<RecvPart> recvs) const;
  // Copies from the ring of `from -> to` at stream position `at` (wrapping).
  void copy_out(int from, int to, uint64_t at, void* dst, size_t n) const;

  ShmGroup& group_;
  uint32_t group_hash_;
  std::string prefix_;
  std::vector<uint64_t> p2p_sent_, p2p_received_;  // point-to-point message numbers per peer
  std::vector<std::string> backlog_;                // per peer: eager bytes not yet in the pipe
  size_t backlogged_ = 0;
};

}  // namespace spmd::shm
