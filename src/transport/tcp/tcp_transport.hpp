// TcpTransport: the Transport over TCP connections. A step runs all its sends and receives on
// non-blocking sockets, trying every part and then blocking in poll() on the ones that could
// not progress, so both directions of a full-duplex exchange move at once and a waiting rank
// never spins (ranks may outnumber cores). Between ranks of one host the connections are local
// Unix sockets, and large frames are remote reads (transport/remote_memory.hpp): the frame carries the
// buffer's address, the receiver copies it from the sender's memory and acknowledges.
#pragma once

#include <poll.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "spmd/store.hpp"
#include "transport/tcp/connection_manager.hpp"
#include "transport/transport.hpp"

namespace spmd::tcp {

class TcpTransport final : public Transport {
 public:
  // `prefix`: the group's store prefix (also names the group in messages); `globals[i]`: the
  // world rank of group rank i.
  TcpTransport(std::shared_ptr<Store> store, std::string prefix, int rank, std::vector<int> globals);
  ~TcpTransport() override;

  int rank() const override { return conns_.rank(); }
  int size() const override { return conns_.size(); }
  void run(std::span<SendPart> sends, std::span<RecvPart> recvs, const OpContext& op) override;
  int wait_any_sender(std::span<const int> peers, const OpContext& op) override;
  bool on_one_host(const OpContext& op) override { return conns_.all_on_one_host(op.deadline); }
  void abort(ErrorKind kind, const std::string& message) noexcept override;

  // Bytes of a receive buffer that reduce-on-receive reads into before handing to the sink:
  // small enough to stay in L2 while it is reduced.
  static constexpr size_t kChunkBytes = 128 << 10;
  // Messages from this size on go by remote read to peers on this host (transport/remote_memory.hpp); a
  // remote read copies at most kRemoteChunkBytes per call so other parts of a step interleave.
  // Measured, P=2 (µs, socket / remote read): one 64 KiB message 14.2 / 16.5, 128 KiB 18.9 /
  // 19.3, 256 KiB 28.7 / 23.0, 512 KiB 51-69 / 32, 1 MiB 141 / 83: the extra round trip of the
  // ack costs more than the saved copy below 128 KiB.
  static constexpr size_t kRemoteMinBytes = 128 << 10;
  static constexpr size_t kRemoteChunkBytes = 256 << 10;
  // A step blocked this long connects to every higher rank of groups up to this size (see run()).
  static constexpr std::chrono::milliseconds kMeshAfter{200};
  static constexpr int kMeshMaxRanks = 128;

 private:
  // Before the abort closes the connections: no more sending, and what peers sent read until
  // each closed or `at_most` passed, so closing resets no connection.
  void drain_before_close(std::chrono::milliseconds at_most) noexcept;
  struct RecvState;
  struct Step;  // one run() in progress (tcp_step.hpp)
  // run()'s phases (tcp_step.cpp).
  TcpPair* pair_when_ready(int peer, const OpContext& op);
  bool resolve(Step& s, const OpContext& op);
  void expose(FrameHeader& h, const SendPart& send);
  bool advance(Step& s, const OpContext& op, bool& pending);
  bool watch_step(Step& s);
  void block(Step& s, const OpContext& op);
  void check_usable() const;
  bool progress_send(SendPart& s, FrameHeader& h, TcpPair& pair);
  bool flush_control(TcpPair& p);                    // writes owed acks between frames
  bool pull_control(TcpPair& p, const OpContext& op);  // reads acks we await
  bool progress_recv(RecvPart& r, RecvState& st, const OpContext& op);
  void accept_header(RecvPart& r, RecvState& st, TcpPair& pair, const OpContext& op, char* landed, size_t extra);
  [[noreturn]] void raise_abort_frame(TcpPair& pair, const char* landed, size_t extra, const OpContext& op);
  // While a step blocks, it also watches the group's other connections and its listeners, so
  // a peer that stopped the group reaches this rank even when this step does not involve it.
  void watch_for_aborts(const std::vector<TcpPair*>& step_pairs, std::vector<pollfd>& fds);
  void check_for_aborts(std::span<pollfd> watched, const OpContext& op);
  void check_early_frame(TcpPair& pair, const OpContext& op);
  [[noreturn]] void raise_timeout(std::span<SendPart> sends, std::span<RecvPart> recvs, const OpContext& op);
  // The global rank a blocked step waits on: its first unfinished receive's, else its first
  // unfinished send's peer (-1: none). For the flight recorder.
  int awaited_peer(std::span<SendPart> sends, std::span<RecvPart> recvs) const;
  [[noreturn]] void rethrow_in_context(const Error& e, const OpContext& op) const;
  // A rank that stops the group also records why in the store ("<prefix>/abort"), so peers
  // whose connections to it broke (or were refused) report the cause, not just the loss.
  void record_abort(ErrorKind kind, const std::string& message) noexcept;
  void raise_recorded_abort(const OpContext& op) const;
  std::string who() const;
  std::string call(const OpContext& op) const;

  std::shared_ptr<Store> store_;
  ConnectionManager conns_;
  std::string prefix_;
  uint32_t group_;
  int32_t self_pid_;
  std::optional<std::pair<ErrorKind, std::string>> broken_;
  // Per peer: the token of our remote send it may be reading (0: none). Cleared when the send
  // completes and, for all peers, by abort() before the failed call's buffers go back to the
  // caller: a reader that then finds its token gone raises instead of returning what it read.
  std::unique_ptr<std::atomic<uint64_t>[]> exposed_;
  uint64_t remote_sends_ = 0;
  std::vector<std::vector<char>> scratch_;  // one chunk buffer per concurrent sink receive
};

}  // namespace spmd::tcp
