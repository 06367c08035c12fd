// The receiver's check of every data frame, shared by the transports: a frame of another
// group, another call, another position in the sequence or another size is a Mismatch whose
// message names both ranks' calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/message.hpp"

namespace spmd {

struct ExpectedFrame {
  const CallSignature& call;  // what this rank called
  uint64_t seq;               // call number (or point-to-point message number)
  bool p2p;
  uint32_t group;             // hash_name of the group's prefix
  const std::string& group_name;
  size_t bytes;               // payload this rank expects
};

// True when `h` is the frame this rank expects.
inline bool frame_matches(const FrameHeader& h, const ExpectedFrame& x) {
  return h.magic == FrameHeader::kMagic && h.group == x.group && h.signature() == x.call && h.seq == x.seq &&
         h.payload == x.bytes;
}

// Raises the Mismatch that says how `h` differs from what this rank expects (returns when it
// does not). `who`: "rank 3"; `where`: the call as this rank's messages name it.
void raise_frame_mismatch(const FrameHeader& h, const ExpectedFrame& expected, const std::string& who,
                          int peer_global, const std::string& where);

// The check of every received header. `who()` and `where()` make the texts of raise_frame_mismatch,
// only when there is a mismatch to describe (this runs on every message of the latency path).
template <typename Who, typename Where>
void check_frame(const FrameHeader& h, const ExpectedFrame& expected, Who&& who, int peer_global, Where&& where) {
  if (!frame_matches(h, expected)) raise_frame_mismatch(h, expected, who(), peer_global, where());
}

}  // namespace spmd
