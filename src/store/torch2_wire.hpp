// The wire protocol of PyTorch 2.x's TCPStore client (torch.distributed.TCPStore with
// use_libuv=False or True alike: the client is the same), as torch 2.6 speaks it, so torch 2
// workers can use the spmd store server directly. 1.13's client speaks another
// (torch_wire.hpp); the layout of each operation's arguments and answer is shared
// (torch_query.hpp).
//
// 2.x numbers its query types anew, VALIDATE first (every type of 1.13 moved up by one), and
// adds APPEND, MULTI_GET, MULTI_SET, CANCEL_WAIT and PING:
//   VALIDATE 0 · SET 1 · COMPARE_SET 2 · GET 3 · ADD 4 · CHECK 5 · WAIT 6 · GETNUMKEYS 7
//   · DELETE_KEY 8 · APPEND 9 · MULTI_GET 10 · MULTI_SET 11 · CANCEL_WAIT 12 · PING 13
// A connection opens with VALIDATE · u32 0x3C85F7CE (no answer), then PING · u32 nonce, which
// must be answered with the same nonce; a wrong magic closes the connection, as with torch's
// own server. A WAIT the client timed out is followed by CANCEL_WAIT, answered WAIT_CANCELED
// (1) after any STOP_WAITING (0) already on its way.
#pragma once

#include <cstdint>
#include <vector>

#include "store/wire.hpp"

namespace spmd::torch2_wire {

enum class Query : uint8_t {
  Validate = 0,
  Set = 1,
  CompareSet = 2,
  Get = 3,
  Add = 4,
  Check = 5,
  Wait = 6,
  GetNumKeys = 7,
  DeleteKey = 8,
  Append = 9,
  MultiGet = 10,
  MultiSet = 11,
  CancelWait = 12,
  Ping = 13,
};

// The u32 after VALIDATE.
constexpr uint32_t kValidationMagic = 0x3C85F7CE;
// Whether the 5 bytes at data are what every torch 2.x connection starts with: VALIDATE and
// the magic.
bool is_opening(const uint8_t* data);

// Parses one query from the front of [data, data + size) into the spmd request it means.
// Queries over max_bytes in all are Invalid once their sizes are known.
wire::Parse parse_query(const uint8_t* data, size_t size, size_t max_bytes,
                        const wire::Limits& limits, wire::Request& out);

// Answers are encoded by torch_query::encode_answer.

// Appends a query as torch's client sends it (for tests and the fuzz target). integer: ADD's
// delta, VALIDATE's magic, PING's nonce.
void encode_query(Query q, const std::vector<std::string>& keys, const std::vector<Bytes>& values,
                  int64_t integer, std::vector<uint8_t>& out);

}  // namespace spmd::torch2_wire
