// What the two TCPStore protocols of PyTorch share: 1.13's (torch_wire.hpp) and 2.x's
// (torch2_wire.hpp). A query is one byte, its type, followed by its arguments, with no frame
// length; the two number their types differently, but a type means one server operation
// (wire::Op), whose arguments and answer are laid out alike in both:
//
//   str/bytes = u64 length · raw bytes       (integers in the host's order: little endian)
//   operation    arguments                          answer
//   Set          str key · bytes value              none
//   CompareSet   str key · bytes expected · bytes desired   bytes (the value now stored)
//   Get          str key                            bytes; an absent key is an error
//   Add          str key · i64 delta                i64 (the sum)
//   Check        u64 n · n × str key                u8 READY (0) / NOT_READY (1)
//   Wait         u64 n · n × str key                u8 STOP_WAITING (0) once all exist
//   NumKeys      -                                  i64
//   Delete       str key                            i64 (keys deleted: 0 or 1)
//   Append       str key · bytes value              none                     (2.x only)
//   MultiGet     u64 n · n × str key                n × bytes; an absent key is an error
//   MultiSet     u64 n · n × (str key · bytes value)   none
//   CancelWait   -                                  u8 WAIT_CANCELED (1)
//   Validate     u32 magic                          none
//   Ping         u32 nonce                          u32 (the same nonce)
//
// torch's client prefixes its keys with "/" (except its "init/" counter), and times a WAIT out
// on its own socket: the server never answers a wait with a timeout (2.x's client then sends
// CANCEL_WAIT). Its GET and MULTI_GET follow a WAIT for the same keys, so an absent key there
// is an error, not something to wait for. The protocol has no error answers: a query the
// server cannot serve closes the connection (torch then raises on its socket).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "store/wire.hpp"

namespace spmd::torch_query {

// A protocol's numbering: the operation a query type means; false, with why, for a type the
// server does not serve.
using OpOf = bool (*)(uint8_t type, wire::Op& op, std::string& error);

// Parses the query at the front of [data, data + size), its type numbered as op_of says, into
// the spmd request it stands for. Queries over max_bytes in all are Invalid once their sizes
// are known; a query not all there yet is NeedMore, with the bytes it needs at least.
wire::Parse parse(OpOf op_of, const uint8_t* data, size_t size, size_t max_bytes,
                  const wire::Limits& limits, wire::Request& out);

// Appends the answer as torch's client reads it. False when the protocol cannot express it
// (an error, an absent key): the connection must then be closed.
bool encode_answer(const wire::Answer& a, std::vector<uint8_t>& out);

// Appends a query of this type byte, meaning `op`, as torch's client sends it (for tests and
// the fuzz targets). integer: Add's delta, Validate's magic, Ping's nonce.
void encode_query(uint8_t type, wire::Op op, const std::vector<std::string>& keys,
                  const std::vector<Bytes>& values, int64_t integer, std::vector<uint8_t>& out);

}  // namespace spmd::torch_query
