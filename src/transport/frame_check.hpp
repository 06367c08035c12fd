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

// `who`: "rank 3"; `where`: the call as this rank's messages name it.
void check_frame(const FrameHeader& h, const ExpectedFrame& expected, const std::string& who, int peer_global,
                 const std::string& where);

}  // namespace spmd
