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
  // A Unix-domain listener with a kernel-chosen abstract name (see name()): the fast path
  // between ranks that share a kernel and network namespace.
  static Listener local();
  const std::string& name() const { return name_; }  // abstract socket name (local only)
  const std::string& host() const { return host_; }
  uint16_t port() const { return port_; }
  int fd() const { return fd_.get(); }
  // Accepts one connection (tuned, non-blocking); an invalid Fd when the deadline passes.
  Fd accept(const Deadline& deadline);
  // Accepts a pending connection if there is one; an invalid Fd otherwise. Never blocks.
  Fd try_accept();
  void close() { fd_.reset(); }

 private:
  Listener() = default;
  Fd fd_;
  std::string name_;
  std::string host_;
  uint16_t port_ = 0;
};

}  // namespace spmd::tcp
