// The wire protocol of PyTorch 1.13's TCPStore client (torch.distributed.TCPStore,
// c10d::TCPStore), so torch workers can use the spmd store server directly. torch 2.x's
// client speaks another (torch2_wire.hpp); what the two share is in torch_query.hpp.
//
// Its query types, each followed by the arguments of the operation it means (torch_query.hpp):
//   SET 0 · COMPARE_SET 1 · GET 2 · ADD 3 · CHECK 4 · WAIT 5 · GETNUMKEYS 6 · WATCH_KEY 7
//   · DELETE_KEY 8
// WATCH_KEY is not supported (the connection is closed).
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
