#include "common/net/socket_address.hpp"

#include <netdb.h>
#include <sys/socket.h>

namespace spmd::net {

namespace {
std::string numeric(const sockaddr_storage& a, socklen_t len) {
  char host[NI_MAXHOST] = {};
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) != 0)
    return "";
  return host;
}
}  // namespace

std::string local_address(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (fd < 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
  return numeric(a, len);
}

std::string peer_address(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "";
  return numeric(a, len);
}

bool is_loopback_address(const std::string& a) {
  return a.rfind("127.", 0) == 0 || a == "::1" || a.rfind("::ffff:127.", 0) == 0;
}

}  // namespace spmd::net
