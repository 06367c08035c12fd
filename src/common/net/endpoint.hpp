// The one way a network address is written in spmd's messages and in what it publishes:
// "host:port", with [brackets] around IPv6 literals so that the port stays unambiguous (the
// transport's connection_manager.cpp and spmdrun's parse_endpoint read it back that way).
#pragma once

#include <cstdint>
#include <string>

namespace spmd::net {

// "10.0.0.1:29500", "node3:29500", "[::1]:29500".
std::string endpoint(const std::string& host, uint16_t port);

}  // namespace spmd::net
