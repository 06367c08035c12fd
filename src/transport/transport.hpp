// Transport: what an algorithm sees of the network. One step = a set of sends and receives
// with a few peers that progress concurrently (full duplex) until all are done, against the
// operation's deadline. Every message carries a FrameHeader checked by the receiver, so a
// transport (tcp/, shm/) gives every algorithm mismatch detection for free.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "common/deadline.hpp"
#include "spmd/error.hpp"
#include "common/error_text.hpp"
#include "call/call.hpp"
#include "transport/message.hpp"

namespace spmd {

// Receives the payload of a RecvPart chunk by chunk: `bytes` bytes (a multiple of the part's
// `align`) that belong at byte `offset` of the message. The data is valid during the call only.
using ChunkSink = std::function<void(size_t offset, const void* data, size_t bytes)>;

struct SendPart {
  int peer = -1;  // group rank
  const void* data = nullptr;
  size_t bytes = 0;
  // When set, only the first *ready bytes may be sent so far: a step that forwards what one of
  // its receives brings in (pipelined broadcast) points this at that RecvPart's `received`.
  const size_t* ready = nullptr;
  // The call this message belongs to when it differs from the step's (batched point-to-point).
  const CallSignature* sig = nullptr;
  // Progress, owned by the transport.
  size_t header_sent = 0;
  size_t sent = 0;
};

struct RecvPart {
  int peer = -1;  // group rank
  void* data = nullptr;  // destination of the payload, unless `sink` is set
  size_t bytes = 0;
  ChunkSink sink;        // consume the payload in chunks (reduce on receive) instead
  size_t align = 1;      // sink chunks are multiples of this (the element size)
  const CallSignature* sig = nullptr;  // as in SendPart
  // Progress, owned by the transport.
  bool header_done = false;
  size_t received = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;  // group rank
  virtual int size() const = 0;
  // Runs one step to completion. Raises Error(Mismatch) when a peer's frame belongs to a
  // different call, Error(PeerLost) when a connection breaks, Error(Timeout) at the deadline.
  virtual void run(std::span<SendPart> sends, std::span<RecvPart> recvs, const OpContext& op) = 0;
  // Waits until one of `peers` has a point-to-point frame with the given signature queued;
  // returns that peer (group rank). Frames of other calls stay queued.
  virtual int wait_any_sender(std::span<const int> peers, const OpContext& op) = 0;
  // True when all members share this host (the same answer on every rank), so algorithms that
  // suit shared memory bandwidth over network links may be chosen.
  virtual bool on_one_host(const OpContext& op) = 0;
  // Tells the peers (where the stream allows) why this rank stops, then closes everything.
  // Later calls raise the same error.
  virtual void abort(ErrorKind kind, const std::string& message) noexcept = 0;
};

// Helpers for the common shapes of a step.
inline void send_recv(Transport& t, const OpContext& op, int to, const void* sbuf, size_t sbytes, int from,
                      void* rbuf, size_t rbytes) {
  SendPart s{to, sbuf, sbytes};
  RecvPart r{from, rbuf, rbytes};
  t.run({&s, 1}, {&r, 1}, op);
}
inline void send_to(Transport& t, const OpContext& op, int to, const void* buf, size_t bytes) {
  SendPart s{to, buf, bytes};
  t.run({&s, 1}, {}, op);
}
inline void recv_from(Transport& t, const OpContext& op, int from, void* buf, size_t bytes) {
  RecvPart r{from, buf, bytes};
  t.run({}, {&r, 1}, op);
}

}  // namespace spmd
