// The wire protocol of PyTorch 1.13's TCPStore client (torch.distributed.TCPStore,
// c10d::TCPStore), so torch workers can use the spmd store server directly.
//
// A query is one byte (its type) followed by its arguments, with no frame length:
//   str/bytes = u64 length · raw bytes       (integers in the host's order: little endian)
//   SET         str key · bytes value                  no answer
//   COMPARE_SET str key · bytes expected · bytes desired   → bytes (the value now stored)
//   GET         str key                                → bytes; an absent key is an error
//   ADD         str key · i64 delta                    → i64 (the sum)
//   CHECK       u64 n · n × str key                    → u8 READY (0) / NOT_READY (1)
//   WAIT        u64 n · n × str key                    → u8 STOP_WAITING (0) once all exist
//   GETNUMKEYS                                         → i64
//   DELETE_KEY  str key                                → i64 (keys deleted: 0 or 1)
// torch's client prefixes its keys with "/" (except the "init/" counter that its constructor
// adds to), and times out WAIT on its own socket: the server never answers a wait with a
// timeout. The protocol has no error answers: a query the server cannot serve closes the
// connection (torch then raises on its socket). WATCH_KEY is not supported.
#pragma once

#include <cstdint>
#include <vector>

#include "store/wire.hpp"

namespace spmd::torch_wire {

enum class Query : uint8_t {
  Set = 0,
  CompareSet = 1,
  Get = 2,
  Add = 3,
  Check = 4,
  Wait = 5,
  GetNumKeys = 6,
  WatchKey = 7,
  DeleteKey = 8,
};

// Parses one query from the front of [data, data + size) into the spmd request it means.
// Queries over max_bytes in all are Invalid once their sizes are known.
wire::Parse parse_query(const uint8_t* data, size_t size, size_t max_bytes,
                        const wire::Limits& limits, wire::Request& out);

// Appends the answer as torch's client reads it. False when torch's protocol cannot express
// it (an error, or a get of an absent key): the connection must then be closed.
bool encode_answer(const wire::Answer& a, std::vector<uint8_t>& out);

// Appends a query as torch's client sends it (for tests and the fuzz target).
void encode_query(Query q, const std::vector<std::string>& keys, const std::vector<Bytes>& values,
                  int64_t integer, std::vector<uint8_t>& out);

}  // namespace spmd::torch_wire
