// ShmTransport: the Transport interface over the segment's pipes, one single-producer/single-
// consumer byte ring per ordered pair of local ranks. A message is a FrameHeader and its
// payload streamed through the ring, exactly as over a socket, so point-to-point operations
// and every TCP-style algorithm run between local ranks without the kernel: a sender copies
// in as far as the ring has room, a receiver copies out (or reduces straight from the ring
// into its output through a sink) and both ring each other's doorbell when the other may be
// asleep. Ranks are local indices (equal to group ranks when the group lives on one host).
//
// Large point-to-point messages between ranks that can reach each other's memory take one
// copy instead of two: the receiver offers its buffer (the pipe's DirectOffer), and a sender
// that finds the offer for the message it is sending writes the rest of the payload straight
// into that buffer (process_vm_writev) and says from which byte (DirectDone). The header still
// travels through the ring, so order and the frame check stay as they are. A sender whose
// receiver has not offered yet holds the payload back a while (offer_wait_ after the step was
// first blocked with it held), then streams it through the ring and, blocked, copies it aside
// as an eager send: a late receiver delays a send by at most that while.
#pragma once

#include <optional>
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
  // Point-to-point payloads from this size go straight into an offered buffer: at 64 KiB (one
  // ring) the two copies through the ring already cost more than the hand-over
  // (docs/bench.md, "Point to point on one host").
  static constexpr size_t kDirectBytes = 64 << 10;
  // How long a blocked sender of such a message waits for the receiver's offer before it
  // streams it through the ring (and copies it aside): about what that copy of 1 MiB costs.
  // Where local ranks outnumber the CPUs the receiver may be waiting for a CPU: 1 ms, about
  // a scheduler slice. `sendrecv` of 1 MiB at P=4 on 2 cores took 1.3–2.0 ms with 50 µs (the
  // ring, 64 KiB per turn of the two ranks on a CPU) and 181–194 µs with 1 ms (Open MPI:
  // 178–291 µs); at P=2 the two gave the same (docs/bench.md, "Point to point on one host").
  // Open MPI's and Gloo's large sends wait for the receiver without limit.
  static constexpr int kOfferWaitUs = 50;
  static constexpr int kOfferWaitOversubscribedUs = 1000;

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
    uint64_t offered = 0;  // number + 1 of the message whose buffer we offered (0: none)
  };
  // Whether a send may go straight into the receiver's buffer, and a receive offer its own.
  bool direct_send(const SendPart& s, const OpContext& op) const {
    return op.p2p && direct_ && !s.ready && s.bytes >= kDirectBytes;
  }
  // A send whose header is in the ring and whose payload waits for the receiver's offer.
  bool held(const SendPart& s, const OpContext& op, bool hold_large) const;
  bool direct_recv(const RecvPart& r, const OpContext& op) const {
    return op.p2p && direct_ && !r.sink && r.bytes >= kDirectBytes;
  }
  // Whether the receiver of `s` offered its buffer for the message of header `h` (the same
  // number, size and call).
  bool offered(const SendPart& s, const FrameHeader& h) const;
  // `hold_large`: a large point-to-point payload waits for its receiver's offer (only its
  // header goes into the ring).
  bool progress_send(SendPart& s, FrameHeader& h, const OpContext& op, bool hold_large);
  // Writes up to n bytes into the pipe to `peer`; returns how many fit.
  size_t write_some(int peer, const char* data, size_t n);
  // Writes a header and its payload into the pipe to `peer` if both fit; false otherwise.
  bool write_message(int peer, const FrameHeader& h, const void* payload, size_t n);
  // Copies into the ring of this rank -> `to` at stream position `at` (wrapping).
  void copy_in(int to, uint64_t at, const void* src, size_t n);
  // Payloads up to this size go into the ring with their header at once (write_message).
  static constexpr size_t kWholeBytes = 4 << 10;
  bool flush_backlogs();
  void defer(SendPart& s, const FrameHeader& h);  // the rest of an eager send, copied aside
  bool progress_recv(RecvPart& r, RecvState& st, const OpContext& op);
  // With a receive whose sender went direct: the byte from which the payload is in its buffer.
  std::optional<size_t> delivered_from(const RecvPart& r, const RecvState& st) const;
  bool can_progress(std::span<SendPart> sends, std::span<const FrameHeader> headers, std::span<RecvPart> recvs,
                    std::span<RecvState> states, const OpContext& op, bool hold_large) const;
  std::string missing(std::span<SendPart> sends, std::span<RecvPart> recvs) const;
  // Copies from the ring of `from -> to` at stream position `at` (wrapping).
  void copy_out(int from, int to, uint64_t at, void* dst, size_t n) const;

  ShmGroup& group_;
  bool direct_;  // every local rank can reach the others' memory (ShmGroup::remote_memory)
  std::chrono::microseconds offer_wait_;  // kOfferWaitUs, or kOfferWaitOversubscribedUs
  uint32_t group_hash_;
  std::string prefix_;
  std::vector<uint64_t> p2p_sent_, p2p_received_;  // point-to-point message numbers per peer
  std::vector<std::string> backlog_;                // per peer: eager bytes not yet in the pipe
  size_t backlogged_ = 0;
};

}  // namespace spmd::shm
