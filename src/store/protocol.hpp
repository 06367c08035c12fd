// The protocols the store server speaks on one port: spmd's frames (wire.hpp) and the queries
// of PyTorch's TCPStore client (torch_wire.hpp). A connection's first bytes say which:
//
//   spmd   u32 payload length · u8 op (1..12) ...      byte 4 is the op: never 0
//   torch  u8 query type (0..8) · u64 length/count ...  byte 4 is bits 24..31 of a u64 length:
//                                                        0 for any key or count below 16 Mi
// and torch's GETNUMKEYS is a single byte (6) that waits for its answer, while spmd frames are
// at least 5 bytes, sent whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "store/wire.hpp"

namespace spmd::store {

enum class Protocol : uint8_t { Unknown, Spmd, Torch };
const char* protocol_name(Protocol p);

// Unknown while there are too few bytes to tell.
Protocol detect_protocol(const uint8_t* data, size_t size);

// One request from the front of the stream, in the connection's protocol.
wire::Parse parse_request(Protocol p, const uint8_t* data, size_t size, size_t max_bytes,
                          const wire::Limits& limits, wire::Request& out);

// Appends the answer in the connection's protocol; false when that protocol cannot express
// it (torch has no error answers): the connection must be closed instead.
bool encode_answer(Protocol p, const wire::Answer& a, std::vector<uint8_t>& out);

}  // namespace spmd::store
