// A loopback TCP port that was free a moment ago, for tests that must hand a port to a
// program before it starts (the program binds it; a clash fails the test, never hangs it).
//
// It is taken from below the kernel's ephemeral range (ip_local_port_range): a port from
// inside it (what binding port 0 gives) can be taken in the meantime by any outgoing
// connection of a test running beside this one, as that connection's own port — held by a
// socket that binds it without listening, which is exactly what a program handed the port
// cannot take over.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <random>

namespace spmd::test {

// A TCP socket bound to 127.0.0.1:port (0: any), not listening; -1 if the port is taken.
inline int loopback_socket_bound_to(int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return s;
  ::close(s);
  return -1;
}

// Binds 127.0.0.1:port (0: any) and returns the port bound, or 0.
inline int bind_loopback(int port) {
  int s = loopback_socket_bound_to(port);
  if (s < 0) return 0;
  sockaddr_in a{};
  socklen_t len = sizeof a;
  int got = ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0 ? ntohs(a.sin_port) : 0;
  ::close(s);
  return got;
}

inline int free_port() {
  int lo = 32768;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d", &lo) != 1) lo = 32768;
    std::fclose(f);
  }
  const int first = lo - 1 > 11024 ? lo - 10000 : 1024;  // 10000 ports below the range
  if (lo - 1 >= first) {
    std::mt19937 pick(std::random_device{}());
    std::uniform_int_distribution<int> in(first, lo - 1);
    for (int tries = 0; tries < 64; ++tries)
      if (int p = bind_loopback(in(pick))) return p;
  }
  return bind_loopback(0);
}

}  // namespace spmd::test
