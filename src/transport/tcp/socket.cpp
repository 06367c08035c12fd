#include "transport/tcp/socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <fstream>
#include <optional>

#include "common/env.hpp"
#include "common/log.hpp"
#include "common/net/connect.hpp"
#include "common/socket_util.hpp"
#include "spmd/error.hpp"

namespace spmd::tcp {

namespace {

std::string first_line_of(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line.empty() ? std::string("(unknown)") : line;
}

// SPMD_SOCKET_CONGESTION: the congestion control of spmd's TCP connections (both ends set it
// for what they send). Unset: the kernel's default (net.ipv4.tcp_congestion_control). Read
// for every socket, so that tests may change it.
void set_congestion_control(int fd) {
  std::optional<std::string> name = env::get("SPMD_SOCKET_CONGESTION");
  if (!name || name->empty()) return;
  int domain = 0;
  socklen_t len = sizeof domain;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 || (domain != AF_INET && domain != AF_INET6))
    return;  // a local (Unix) socket: no congestion control
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name->data(), static_cast<socklen_t>(name->size())) == 0) return;
  int e = errno;
  raise(ErrorKind::InvalidArgument,
        "SPMD_SOCKET_CONGESTION=" + *name + ": the kernel refused it for spmd's TCP connections (" +
            std::strerror(e) + "); this host has: " +
            first_line_of("/proc/sys/net/ipv4/tcp_available_congestion_control") +
            "; processes without CAP_NET_ADMIN may choose: " +
            first_line_of("/proc/sys/net/ipv4/tcp_allowed_congestion_control") +
            " (load another with modprobe tcp_<name>, allow it in net.ipv4.tcp_allowed_congestion_control, "
            "or unset SPMD_SOCKET_CONGESTION for the kernel's default)");
}

}  // namespace

void tune_connection(int fd) {
  net::set_nodelay(fd);
  set_congestion_control(fd);
  static const int configured = static_cast<int>(env::get_int("SPMD_SOCKET_BUFFER").value_or(kSocketBufferBytes));
  int bytes = configured;
  if (bytes <= 0) return;  // 0: leave the kernel's autotuning on
  // SO_*BUFFORCE passes the sysctl caps when we may (root); otherwise take what we get.
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bytes, sizeof bytes) != 0)
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
}

namespace {

std::string address_of_interface(const std::string& ifname) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) raise_errno("listing network interfaces for SPMD_SOCKET_IFNAME");
  std::string found;
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_addr || ifname != a->ifa_name) continue;
    char buf[INET6_ADDRSTRLEN] = {};
    if (a->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, buf, sizeof buf);
      found = buf;
      break;  // prefer IPv4
    }
    if (a->ifa_addr->sa_family == AF_INET6 && found.empty()) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, buf, sizeof buf);
      found = buf;
    }
  }
  ::freeifaddrs(list);
  if (found.empty())
    raise(ErrorKind::InvalidArgument, "SPMD_SOCKET_IFNAME=" + ifname +
                                          " names no interface with an IP address here; list them with `ip addr`");
  return found;
}

// The source address the kernel would use to reach `host` (a UDP connect sends nothing).
std::string address_routing_to(const std::string& host) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || !res) return "127.0.0.1";
  std::string out = "127.0.0.1";
  Fd s(::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (s && ::connect(s.get(), res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&local), &len) == 0) {
      char buf[NI_MAXHOST] = {};
      if (::getnameinfo(reinterpret_cast<sockaddr*>(&local), len, buf, sizeof buf, nullptr, 0, NI_NUMERICHOST) == 0)
        out = buf;
    }
  }
  ::freeaddrinfo(res);
  return out;
}

}  // namespace

std::string choose_listen_address() {
  if (auto ifname = env::get("SPMD_SOCKET_IFNAME")) return address_of_interface(*ifname);
  // spmdrun's: the address the other nodes reach this node at (--local-addr, or learned).
  if (auto local = env::get("SPMD_LOCAL_ADDR"); local && !local->empty()) return *local;
  if (auto master = env::get("MASTER_ADDR")) return address_routing_to(*master);
  return "127.0.0.1";
}

Fd connect_local(const std::string& name, const Deadline& deadline, const std::string& what) {
  Fd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd) raise_errno(what + ": creating a local socket");
  tune_connection(fd.get());
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof addr.sun_path) raise(ErrorKind::InvalidArgument, what + ": local name too long");
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  auto len = static_cast<socklen_t>(sizeof(sa_family_t) + 1 + name.size());
  int r = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len);
  if (r != 0 && errno == EAGAIN) {  // backlog full: wait for the peer to accept
    if (!net::wait_fd(fd.get(), POLLOUT, deadline)) raise(ErrorKind::Timeout, what + ": no answer before the deadline");
    r = 0;
  }
  if (r != 0 && errno != EINPROGRESS)
    raise(ErrorKind::PeerLost, what + " (local socket) failed: " + std::strerror(errno) +
                                   " (the peer process probably exited)");
  return fd;
}

Fd connect_to(const std::string& host, uint16_t port, const Deadline& deadline, const std::string& what) {
  net::ConnectOptions o;
  o.what = what;
  o.advice = "the peer process probably exited; look for its own error first";
  o.prepare = tune_connection;  // buffers before connect, so the window scale is negotiated for them
  return net::connect_tcp(host, port, deadline, o);
}

}  // namespace spmd::tcp
