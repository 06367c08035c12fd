// The frame every transport message starts with. The signature of the call (call/call.hpp)
// travels with every message so a receiver can tell "the peer is in a different call"
// (Error(Mismatch), naming both calls) from "the peer is slow" (Error(Timeout)).
#pragma once

#include <cstdint>
#include <string>

#include "call/call.hpp"

namespace spmd {

// Data: the payload follows. Abort: the payload is why the sender stopped. Remote: the
// payload stays in the sender's memory at remote_address (same host), the receiver reads it
// and answers with Ack (same seq) so the sender may reuse its buffer.
enum class FrameKind : uint8_t { Data = 1, Abort = 2, Remote = 3, Ack = 4 };

// 72 bytes on the wire, host byte order (all ranks of a job share one architecture).
struct FrameHeader {
  static constexpr uint32_t kMagic = 0x444d5053;  // "SPMD"
  uint32_t magic = kMagic;
  FrameKind kind = FrameKind::Data;
  Collective collective = Collective::Barrier;
  DType dtype = DType::U8;
  uint8_t op = 0;         // ReduceOp for data frames; ErrorKind for abort frames
  uint32_t group = 0;     // hash of the group's name
  int32_t root = -1;
  uint64_t seq = 0;       // the call's sequence number in its group
  uint64_t count = 0;
  uint64_t payload = 0;   // bytes that follow this header (Remote: bytes to read)
  uint64_t remote_address = 0;
  int32_t remote_pid = 0;
  uint16_t algo = 0;      // CallSignature::algo
  uint16_t reserved = 0;
  // Remote: a word in the sender's memory that holds remote_token while the sender is still in
  // this send; the reader checks it after reading (a sender that failed cleared it first).
  uint64_t remote_token_address = 0;
  uint64_t remote_token = 0;

  CallSignature signature() const {
    return {collective, dtype, static_cast<ReduceOp>(op), root, count, algo};
  }
  static FrameHeader data(uint32_t group, uint64_t seq, const CallSignature& s, uint64_t payload) {
    FrameHeader h;
    h.collective = s.collective;
    h.dtype = s.dtype;
    h.op = static_cast<uint8_t>(s.op);
    h.group = group;
    h.root = s.root;
    h.seq = seq;
    h.count = s.count;
    h.payload = payload;
    h.algo = s.algo;
    return h;
  }
};
static_assert(sizeof(FrameHeader) == 72, "FrameHeader is a wire format");

}  // namespace spmd
