// The protocols the store server speaks on one port: spmd's frames (wire.hpp) and the queries
// of PyTorch's TCPStore client, 1.13's (torch_wire.hpp) and 2.x's (torch2_wire.hpp). A
// connection's first bytes say which:
//
//   torch 2.x  00 CE F7 85 3C: VALIDATE (0) · u32 magic 0x3C85F7CE, always its first query
//   spmd       u32 payload length · u8 op (1..12) ...      byte 4 is the op: never 0
//   torch 1.13 u8 query type (0..8) · u64 length/count ...  byte 4 is bits 24..31 of a u64
//                                                            length: 0 for any key or count
//                                                            below 16 Mi
// and 1.13's GETNUMKEYS is a single byte (6) that waits for its answer, while spmd frames are
// at least 5 bytes, sent whole, and 2.x's opening is 5 bytes. The 2.x opening is checked
// first; it cannot be either of the others: as 1.13's SET it would announce a key of ~1 GB
// (byte 4 is 0x3C, not 0), as an spmd frame a payload of ~2.2 GB (the limit is 65 MiB). A
// connection whose first byte is VALIDATE with another magic is taken for 1.13 or spmd by the
// rule above, and its query then breaks a limit or does not parse: it is closed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "store/wire.hpp"

namespace spmd::store {

enum class Protocol : uint8_t { Unknown, Spmd, Torch, Torch2 };
const char* protocol_name(Protocol p);
// PyTorch's protocols (either version): no error answers, and a client that cannot present a
// token, never reconnects and times its waits out on its own socket.
inline bool is_torch(Protocol p) { return p == Protocol::Torch || p == Protocol::Torch2; }

// Unknown while there are too few bytes to tell.
Protocol detect_protocol(const uint8_t* data, size_t size);

// One request from the front of the stream, in the connection's protocol.
wire::Parse parse_request(Protocol p, const uint8_t* data, size_t size, size_t max_bytes,
                          const wire::Limits& limits, wire::Request& out);

// Appends the answer in the connection's protocol; false when that protocol cannot express
// it (torch has no error answers): the connection must be closed instead.
bool encode_answer(Protocol p, const wire::Answer& a, std::vector<uint8_t>& out);

}  // namespace spmd::store
