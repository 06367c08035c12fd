// The TcpStore wire format: length-prefixed frames with hard size limits.
//
//   frame    = u32 payload_length (little endian) · payload
//   request  = u8 op · fields of that op (see Op)
//   response = u8 status · i64 integer · u32 count · count × bytes
//   str/bytes = u32 length · raw bytes
//
// Everything here is pure (no sockets) so the parser can be fuzzed and unit-tested alone.
// A frame that breaks a limit or does not parse is an error for that connection only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "spmd/store.hpp"

namespace spmd::wire {

enum class Op : uint8_t {
  Auth = 1,        // str token
  Set = 2,         // str key · bytes value
  Get = 3,         // u64 timeout_ms · str key                 (waits server-side)
  Add = 4,         // str key · i64 delta
  CompareSet = 5,  // str key · bytes expected · bytes desired
  Wait = 6,        // u64 timeout_ms · u32 n · n × str key     (waits server-side)
  Check = 7,       // u32 n · n × str key
  Delete = 8,      // str key
  NumKeys = 9,     // (nothing)
  MultiGet = 10,   // u64 timeout_ms · u32 n · n × str key     (waits server-side)
  MultiSet = 11,   // u32 n · n × (str key · bytes value)
  Append = 12,     // str key · bytes value
  // What PyTorch 2.x's TCPStore client asks besides the above (torch2_wire.hpp). Never on
  // spmd's wire: decode_request refuses them, encode_request writes no fields for them.
  Validate = 64,    // integer: the client's magic number (checked by the parser); no answer
  Ping = 65,        // integer: a nonce, answered back
  CancelWait = 66,  // cancels the connection's parked waits
};
const char* op_name(Op op);
// "get('a')", "multi_get('a', 'b' and 3 more)", "num_keys": a request in error messages.
std::string describe(Op op, const std::vector<std::string>& keys);

enum class Status : uint8_t {
  Ok = 0,       // integer and values carry the result
  Error = 1,    // values[0] is a message; the server closes the connection after it
  Timeout = 2,  // values are the keys still missing
  Closed = 3,   // values[0] is a message: the server closed this connection (it sat idle)
                // before reading the request, so nothing of it was applied; reconnect, resend
};

struct Limits {
  size_t max_key_bytes = 4096;
  size_t max_value_bytes = 64u << 20;
  size_t max_keys = 1u << 16;  // keys in one request
  // A whole frame, request or answer: one maximal value plus room for keys. Bounds what one
  // request can make the server buffer, and what one answer can make it build.
  size_t max_frame_bytes() const { return max_value_bytes + (1u << 20); }
};

struct Request {
  Op op = Op::NumKeys;
  uint64_t timeout_ms = 0;
  int64_t integer = 0;              // Add's delta
  std::vector<std::string> keys;    // Auth: keys[0] is the token
  std::vector<Bytes> values;        // Set/Append: [value]; CompareSet: [expected, desired]
};

struct Response {
  Status status = Status::Ok;
  int64_t integer = 0;
  std::vector<Bytes> values;
};

// The server's answer to one request, before it is encoded for the connection's protocol.
// Its values are borrowed (from the store or the caller) and valid only while it is encoded,
// so an answer of large values is built once, in the output buffer.
struct Answer {
  Op op = Op::NumKeys;  // the request answered (protocols encode answers per operation)
  Status status = Status::Ok;
  int64_t integer = 0;
  std::vector<const Bytes*> values;
};

constexpr size_t kHeaderBytes = 4;

// Appends one whole frame (header + payload) to `out`.
void encode_request(const Request& r, std::vector<uint8_t>& out);
void encode_response(const Response& r, std::vector<uint8_t>& out);
void encode_answer(const Answer& a, std::vector<uint8_t>& out);
// The size of the frame encode_answer would write, for values of these sizes in total.
inline size_t answer_frame_bytes(size_t num_values, size_t value_bytes) {
  return kHeaderBytes + 13 + 4 * num_values + value_bytes;
}

// Parses one payload. Returns false and sets `error` when it is malformed or breaks a limit.
bool decode_request(const uint8_t* data, size_t size, const Limits& limits, Request& out,
                    std::string& error);
bool decode_response(const uint8_t* data, size_t size, Response& out, std::string& error);

// The outcome of looking for one request at the front of a byte stream.
struct Parse {
  enum class Kind { Request, NeedMore, Invalid };
  Kind kind = Kind::NeedMore;
  size_t bytes = 0;   // Request: bytes it took; NeedMore: bytes the request needs at least
  std::string error;  // Invalid: why (the stream cannot be resynchronised after it)
};
// One spmd frame from the front of [data, data + size): frames over max_frame bytes are Invalid
// as soon as their header is in.
Parse parse_frame(const uint8_t* data, size_t size, size_t max_frame, const Limits& limits,
                  Request& out);

// Collects bytes from a stream and cuts them into frames.
class FrameReader {
 public:
  enum class Result { Frame, NeedMore, Error };
  explicit FrameReader(size_t max_frame_bytes) : max_frame_(max_frame_bytes) {}

  // Room for at least n more bytes; commit() what was actually written there.
  uint8_t* prepare(size_t n);
  void commit(size_t n) { end_ += n; }
  void append(const uint8_t* data, size_t n);

  // On Frame, [payload, payload + size) stays valid until the next prepare/append/next call.
  Result next(const uint8_t*& payload, size_t& size, std::string& error);
  size_t buffered() const { return end_ - begin_; }

 private:
  std::vector<uint8_t> buf_;
  size_t begin_ = 0, end_ = 0;
  size_t max_frame_;
};

}  // namespace spmd::wire
