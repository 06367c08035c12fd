// libFuzzer target: the store server's whole connection state machine (ServerCore), without
// sockets. The input is a script of steps on 4 connections: open, feed raw bytes, feed a
// well-formed spmd request or torch (1.13 or 2.x) query built from the next bytes (so the
// fuzzer reaches deep states quickly), read some or all output, close, let time pass. Small
// limits make every limit reachable. Checked: no crash, leak or UB; memory stays near its limit; every
// spmd answer stream decodes; and once every connection is closed, the memory account is
// back to exactly what the stored keys and values hold.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>

#include "store/server_core.hpp"
#include "store/torch2_wire.hpp"
#include "store/torch_wire.hpp"
#include "store/wire.hpp"

using namespace spmd;
using store::ConnId;

namespace {

struct Input {
  const uint8_t* p;
  size_t n;
  size_t at = 0;
  bool empty() const { return at >= n; }
  uint8_t byte() { return at < n ? p[at++] : 0; }
};

wire::Request spmd_request(Input& in) {
  wire::Request r;
  r.op = static_cast<wire::Op>(1 + in.byte() % 12);
  size_t nkeys = r.op == wire::Op::Check || r.op == wire::Op::Wait || r.op == wire::Op::MultiGet ||
                         r.op == wire::Op::MultiSet
                     ? 1 + in.byte() % 3
                     : 1;
  for (size_t i = 0; i < nkeys; ++i) r.keys.push_back("k" + std::to_string(in.byte() % 4));
  size_t value = size_t(in.byte()) * 24;  // up to ~6 KB: over the 4 KB value limit at times
  if (r.op == wire::Op::Set || r.op == wire::Op::Append) r.values = {Bytes(value, 'v')};
  if (r.op == wire::Op::CompareSet) r.values = {Bytes(in.byte() % 2, 'v'), Bytes(value, 'w')};
  if (r.op == wire::Op::MultiSet) r.values.assign(nkeys, Bytes(value / 4, 'm'));
  if (r.op == wire::Op::Auth) r.keys = {in.byte() % 2 ? "t" : "wrong"};
  r.integer = static_cast<int8_t>(in.byte());
  r.timeout_ms = in.byte() * 20;
  return r;
}

// A query of torch 1.13's protocol or, for a first byte from 128, of torch 2.x's (its VALIDATE
// carries the right magic number most of the time, so that connections open as torch's do).
std::vector<uint8_t> torch_query(Input& in) {
  uint8_t kind = in.byte();
  std::vector<std::string> keys = {"k" + std::to_string(in.byte() % 4), "k1"};
  std::vector<Bytes> values = {Bytes(in.byte() * 24, 'v'), Bytes(in.byte() % 8, 'w')};
  int64_t integer = static_cast<int8_t>(in.byte());
  std::vector<uint8_t> out;
  if (kind < 128) {
    torch_wire::encode_query(static_cast<torch_wire::Query>(kind % 9), keys, values, integer, out);
    return out;
  }
  auto q = static_cast<torch2_wire::Query>((kind - 128) % 14);
  if (q == torch2_wire::Query::Validate && integer % 8 != 0) integer = torch2_wire::kValidationMagic;
  torch2_wire::encode_query(q, keys, values, integer, out);
  return out;
}

// Checks that a connection's spmd output is whole frames that decode (torch's is not framed).
struct Stream {
  std::vector<uint8_t> bytes;
  bool torch = false;
  void check() {
    size_t at = 0;
    while (!torch && bytes.size() - at >= 4) {
      uint32_t len = uint32_t(bytes[at]) | uint32_t(bytes[at + 1]) << 8 | uint32_t(bytes[at + 2]) << 16 |
                     uint32_t(bytes[at + 3]) << 24;
      if (bytes.size() - at - 4 < len) break;
      wire::Response r;
      std::string err;
      if (!wire::decode_response(bytes.data() + at + 4, len, r, err)) std::abort();
      at += 4 + len;
    }
    bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(at));
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Input in{data, size};
  store::ServerConfig cfg;
  cfg.where = "fuzz:1";
  cfg.token = in.byte() % 4 == 0 ? "t" : "";
  cfg.limits.max_key_bytes = 64;
  cfg.limits.max_value_bytes = 4096;
  cfg.limits.max_keys = 16;
  cfg.max_memory_bytes = 64 * 1024;
  cfg.max_connections = 3;
  cfg.idle_timeout = std::chrono::seconds(1);
  cfg.auth_timeout = std::chrono::seconds(1);
  store::ServerCore core(cfg);
  auto now = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  std::set<ConnId> open;
  Stream streams[5];

  auto feed = [&](ConnId id, const uint8_t* p, size_t n) {
    while (n > 0) {
      auto space = core.input_space(id);
      if (space.empty()) return;
      size_t k = std::min(n, space.size());
      std::memcpy(space.data(), p, k);
      core.received(id, k, now);
      p += k;
      n -= k;
    }
  };
  auto drain = [&](ConnId id, size_t most) {
    auto out = core.output(id);
    size_t k = std::min(most, out.size());
    streams[id].torch = store::is_torch(core.protocol(id));
    streams[id].bytes.insert(streams[id].bytes.end(), out.begin(), out.begin() + static_cast<std::ptrdiff_t>(k));
    core.sent(id, k, now);
    streams[id].check();
  };

  while (!in.empty()) {
    uint8_t step = in.byte();
    ConnId id = 1 + (step >> 4) % 4;
    bool is_open = open.count(id) > 0;
    switch (step % 8) {
      case 0:
        if (!is_open && core.open(id, "fuzz", now)) {
          open.insert(id);
          streams[id] = Stream{};
        }
        break;
      case 1: {  // raw bytes, as TCP delivers them
        size_t n = std::min<size_t>(1 + in.byte(), size - in.at);
        if (is_open) feed(id, data + in.at, n);
        in.at += n;
        break;
      }
      case 2:
        if (is_open) {
          std::vector<uint8_t> b;
          wire::encode_request(spmd_request(in), b);
          feed(id, b.data(), b.size());
        }
        break;
      case 3:
        if (is_open) {
          auto b = torch_query(in);
          feed(id, b.data(), b.size());
        }
        break;
      case 4:
        if (is_open) drain(id, SIZE_MAX);
        break;
      case 5:
        if (is_open) drain(id, in.byte());
        break;
      case 6:
        if (is_open) {
          core.close(id);
          open.erase(id);
        }
        break;
      case 7:
        now += std::chrono::milliseconds(in.byte() * 20);
        core.tick(now);
        break;
    }
    for (ConnId c : core.take_changed())
      if (open.count(c) && core.finished(c)) {
        drain(c, SIZE_MAX);
        core.close(c);
        open.erase(c);
      }
    // Beyond the limit only by what is never refused: error answers and connections' fixed
    // cost, and one read's worth of input per connection before it is charged.
    if (core.memory().used() > cfg.max_memory_bytes + 4 * (64 * 1024 + 8 * 1024)) std::abort();
  }
  for (ConnId c : std::set<ConnId>(open)) core.close(c);
  if (core.state().num_waiters() != 0) std::abort();
  if (core.memory().used() != core.state().bytes()) std::abort();
  return 0;
}
