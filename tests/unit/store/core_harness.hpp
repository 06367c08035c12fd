// Drives a ServerCore the way the socket layer does, without sockets: bytes in through
// input_space()/received(), bytes out through output()/sent(), time passed explicitly.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "raw_client.hpp"  // request()
#include "store/server_core.hpp"
#include "store/wire.hpp"

namespace spmd::store_test {

struct CoreHarness {
  using Clock = store::ServerCore::Clock;

  explicit CoreHarness(store::ServerConfig config) : core(std::move(config)) {}

  store::ServerCore core;
  Clock::time_point now = Clock::now();

  bool open(store::ConnId id) { return core.open(id, "peer#" + std::to_string(id), now); }

  // Feeds bytes in the pieces the core asks for; returns how many it would not take (it
  // stopped reading this connection).
  size_t feed(store::ConnId id, const std::vector<uint8_t>& bytes) {
    size_t at = 0;
    while (at < bytes.size()) {
      auto space = core.input_space(id);
      if (space.empty()) break;
      size_t n = std::min(space.size(), bytes.size() - at);
      std::memcpy(space.data(), bytes.data() + at, n);
      core.received(id, n, now);
      at += n;
    }
    return bytes.size() - at;
  }
  size_t send(store::ConnId id, const wire::Request& r) {
    std::vector<uint8_t> b;
    wire::encode_request(r, b);
    return feed(id, b);
  }

  // Everything the core has to send on this connection (as if the client read it all).
  std::vector<uint8_t> drain(store::ConnId id) {
    std::vector<uint8_t> all;
    for (;;) {
      auto out = core.output(id);
      if (out.empty()) return all;
      all.insert(all.end(), out.begin(), out.end());
      core.sent(id, out.size(), now);
    }
  }
  // The spmd answers waiting on this connection.
  std::vector<wire::Response> answers(store::ConnId id) {
    std::vector<uint8_t> bytes = drain(id);
    std::vector<wire::Response> out;
    size_t at = 0;
    while (bytes.size() - at >= wire::kHeaderBytes) {
      uint32_t len = uint32_t(bytes[at]) | uint32_t(bytes[at + 1]) << 8 |
                     uint32_t(bytes[at + 2]) << 16 | uint32_t(bytes[at + 3]) << 24;
      wire::Response r;
      std::string err;
      if (!wire::decode_response(bytes.data() + at + 4, len, r, err)) break;
      out.push_back(std::move(r));
      at += 4 + len;
    }
    return out;
  }
  std::string error_of(store::ConnId id) {
    auto a = answers(id);
    if (a.empty() || a.back().values.empty()) return "";
    return to_string(a.back().values[0]);
  }
  void advance(std::chrono::milliseconds t) {
    now += t;
    core.tick(now);
  }
};

// The first bytes of a frame announcing a payload of `len` bytes (and an op), nothing more.
inline std::vector<uint8_t> frame_header(uint32_t len, wire::Op op) {
  return {uint8_t(len), uint8_t(len >> 8), uint8_t(len >> 16), uint8_t(len >> 24), uint8_t(op)};
}

}  // namespace spmd::store_test
