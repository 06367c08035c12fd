// A bare TCP connection to a store server, for sending hand-made (and broken) frames.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <optional>
#include <stdexcept>

#include "common/fd.hpp"
#include "store/wire.hpp"

namespace spmd::store_test {

class RawClient {
 public:
  explicit RawClient(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
      throw std::runtime_error("raw connect failed");
  }
  int fd() const { return fd_.get(); }

  void send_bytes(const std::vector<uint8_t>& b) {
    size_t off = 0;
    while (off < b.size()) {
      ssize_t r = ::send(fd_.get(), b.data() + off, b.size() - off, MSG_NOSIGNAL);
      if (r <= 0) return;  // the server may already have closed us; that is what tests check
      off += static_cast<size_t>(r);
    }
  }
  void send(const wire::Request& r) {
    std::vector<uint8_t> b;
    wire::encode_request(r, b);
    send_bytes(b);
  }

  // Reads one response frame; nullopt when the server closed the connection (or 10 s passed).
  std::optional<wire::Response> read(int timeout_ms = 10000) {
    uint8_t hdr[4];
    if (!read_exact(hdr, 4, timeout_ms)) return std::nullopt;
    uint32_t len = uint32_t(hdr[0]) | uint32_t(hdr[1]) << 8 | uint32_t(hdr[2]) << 16 |
                   uint32_t(hdr[3]) << 24;
    std::vector<uint8_t> payload(len);
    if (!read_exact(payload.data(), len, timeout_ms)) return std::nullopt;
    wire::Response r;
    std::string err;
    if (!wire::decode_response(payload.data(), len, r, err)) return std::nullopt;
    return r;
  }

  // Exactly n bytes as they come (answers of protocols without frames); nullopt when the
  // server closed the connection or the timeout passed first.
  std::optional<std::vector<uint8_t>> read_raw(size_t n, int timeout_ms = 10000) {
    std::vector<uint8_t> b(n);
    if (!read_exact(b.data(), n, timeout_ms)) return std::nullopt;
    return b;
  }

  // True once the server has closed this connection (EOF within the timeout).
  bool closed_by_server(int timeout_ms = 10000) {
    uint8_t b[256];
    for (;;) {
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return false;
      ssize_t r = ::recv(fd_.get(), b, sizeof b, 0);
      if (r == 0 || (r < 0 && errno == ECONNRESET)) return true;
      if (r < 0) return false;
    }
  }

 private:
  bool read_exact(uint8_t* p, size_t n, int timeout_ms) {
    while (n > 0) {
      pollfd pf{fd_.get(), POLLIN, 0};
      if (::poll(&pf, 1, timeout_ms) <= 0) return false;
      ssize_t r = ::recv(fd_.get(), p, n, 0);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  Fd fd_;
};

inline wire::Request request(wire::Op op, std::vector<std::string> keys = {},
                             std::vector<Bytes> values = {}, uint64_t timeout_ms = 0) {
  wire::Request r;
  r.op = op;
  r.keys = std::move(keys);
  r.values = std::move(values);
  r.timeout_ms = timeout_ms;
  return r;
}

}  // namespace spmd::store_test
