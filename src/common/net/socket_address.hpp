// The numeric addresses of a connected socket's two ends: how this host reached a server, and
// the server as this host reached it. A launcher learns from them the address the other nodes
// really reach this node at, where name resolution would give loopback (a host name mapped to
// 127.0.1.1, as Debian's /etc/hosts does; hosts or containers sharing one name).
#pragma once

#include <string>

namespace spmd::net {

std::string local_address(int fd);  // "" when fd is not a connected socket
std::string peer_address(int fd);
// 127.0.0.0/8, ::1, and IPv4-mapped loopback.
bool is_loopback_address(const std::string& numeric);

}  // namespace spmd::net
