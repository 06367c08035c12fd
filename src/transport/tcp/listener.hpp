// Listener: the socket a rank's peers connect to (bound to an ephemeral port; the address is
// published in the store by the connection manager).
#pragma once

#include <cstdint>
#include <string>

#include "common/deadline.hpp"
#include "common/fd.hpp"

namespace spmd::tcp {

class Listener {
 public:
  // Binds host:0 (or host:port) and listens.
  explicit Listener(const std::string& host, uint16_t port = 0);
  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  int fd() const { return fd_.get(); }
  // Accepts one connection (tuned, non-blocking); an invalid Fd when the deadline passes.
  Fd accept(const Deadline& deadline);
  void close() { fd_.reset(); }

 private:
  Fd fd_;
  std::string host_;
  uint16_t port_ = 0;
};

}  // namespace spmd::tcp
