#include "common/net/endpoint.hpp"

namespace spmd::net {

std::string endpoint(const std::string& host, uint16_t port) {
  // A ':' can only be part of an IPv6 literal (host names and IPv4 addresses have none).
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

}  // namespace spmd::net
