// libFuzzer target: the TcpStore server's input path without sockets. Bytes are cut into
// frames by FrameReader (in chunks whose sizes come from the input, as TCP would deliver
// them), decoded with small limits, and applied to a ServerState, whose answers are encoded.
// Crashes, leaks, UB or a frame accepted beyond a limit are bugs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "store/server_state.hpp"
#include "store/wire.hpp"

using namespace spmd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  wire::Limits limits;
  limits.max_key_bytes = 64;
  limits.max_value_bytes = 4096;
  limits.max_keys = 16;
  std::vector<uint8_t> out;
  store::MemoryBudget budget(size_t(1) << 20);
  store::ServerState state(limits, budget, [&](store::ConnId, const wire::Answer& a) {
    out.clear();
    wire::encode_answer(a, out);
    wire::Response back;
    std::string err;
    if (!wire::decode_response(out.data() + wire::kHeaderBytes, out.size() - wire::kHeaderBytes,
                               back, err))
      std::abort();  // the server must always produce answers its clients can read
  });
  auto now = std::chrono::steady_clock::time_point{};
  wire::FrameReader reader(limits.max_frame_bytes());
  // The first byte picks the chunk size and which of 4 connections the bytes belong to.
  size_t chunk = 1 + data[0] % 64;
  store::ConnId conn = 1 + (data[0] >> 6);
  for (size_t at = 1; at < size; at += chunk) {
    reader.append(data + at, std::min(chunk, size - at));
    const uint8_t* payload;
    size_t n;
    std::string err;
    wire::FrameReader::Result r;
    while ((r = reader.next(payload, n, err)) == wire::FrameReader::Result::Frame) {
      wire::Request req;
      if (!wire::decode_request(payload, n, limits, req, err)) return 0;  // server closes
      for (const auto& k : req.keys)
        if (k.size() > limits.max_key_bytes) std::abort();
      for (const auto& v : req.values)
        if (v.size() > limits.max_value_bytes) std::abort();
      state.handle(conn, std::move(req), now);
      now += std::chrono::milliseconds(7);
      state.expire(now);
      conn = conn % 4 + 1;
    }
    if (r == wire::FrameReader::Result::Error) return 0;
  }
  state.drop_connection(1);
  state.expire(now + std::chrono::hours(1));
  // Also feed the raw bytes to the client's response decoder.
  wire::Response resp;
  std::string err;
  wire::decode_response(data, size, resp, err);
  return 0;
}
