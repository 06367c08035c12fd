#include "common/socket_util.hpp"

#include <fcntl.h>

#include "spmd/error.hpp"

namespace spmd {

void set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) raise_errno("making a socket non-blocking");
}

std::string endpoint_text(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

}  // namespace spmd
