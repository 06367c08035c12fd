#include "common/net/resolve.hpp"

#include <sys/socket.h>

namespace spmd::net {

int resolve(const std::string& host, uint16_t port, bool passive, AddrInfo& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
  std::string service = std::to_string(port);
  // No node: every interface when passive, the loopback address otherwise.
  const char* node = (host.empty() || host == "*") ? nullptr : host.c_str();
  int rc = ::getaddrinfo(node, service.c_str(), &hints, &out.list);
  if (rc == 0 && out.list == nullptr) rc = EAI_NONAME;  // success without an address is no success
  return rc;
}

}  // namespace spmd::net
