// TcpPair: the connection between this rank and one peer, with the framing state that must
// survive between steps (a header already read but not yet consumed, whether our outgoing
// stream is between frames, per-direction point-to-point counters).
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/fd.hpp"
#include "transport/message.hpp"

namespace spmd::tcp {

class TcpPair {
 public:
  TcpPair(Fd fd, int peer, int peer_global) : fd_(std::move(fd)), peer_(peer), peer_global_(peer_global) {}

  int fd() const { return fd_.get(); }
  int peer() const { return peer_; }              // group rank
  int peer_global() const { return peer_global_; }  // world rank, for messages
  bool open() const { return fd_.valid(); }

  // Non-blocking scatter read / gather write. Return the bytes moved (0 = would block).
  // Raise Error(PeerLost) when the peer closed or reset the connection.
  size_t read_some(iovec* iov, int n);
  size_t write_some(const iovec* iov, int n);

  // The incoming frame header being assembled (or complete and not yet consumed).
  FrameHeader in_header;
  size_t in_header_got = 0;
  bool in_header_ready() const { return in_header_got == sizeof(FrameHeader); }
  // Reads header bytes if available; true once the header is complete.
  bool pull_header();

  // False while a frame we send is partly written (an abort frame then cannot be inserted).
  bool out_at_boundary = true;
  // True while the payload of an inline frame is being read (its bytes are not headers).
  bool in_payload = false;

  // Remote reads (transport/remote_memory.hpp): whether we read this peer's memory, whether our Remote
  // frame awaits the peer's ack, and control frames (acks) waiting for our stream to be
  // between frames.
  bool remote_ok = false;
  int32_t remote_pid = 0;
  bool awaiting_ack = false;
  std::string control_out;
  bool control_started = false;
  uint64_t p2p_sent = 0;
  uint64_t p2p_received = 0;
  // The peer closed this connection while no step used it (it left the group): watched no more.
  bool closed_while_idle = false;

  void shutdown_and_close();

 private:
  Fd fd_;
  int peer_;
  int peer_global_;
};

}  // namespace spmd::tcp
