// Small TCP helpers for the store: bind/listen, connect with retry, and deadline-bounded
// send/receive on non-blocking sockets. Every fd is an Fd; EINTR goes through retry_eintr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <chrono>
#include <string>

#include "common/deadline.hpp"
#include "common/fd.hpp"
#include "common/socket_util.hpp"

namespace spmd::net {

// "host:port", with brackets for IPv6 literals.
inline std::string endpoint(const std::string& host, uint16_t port) { return endpoint_text(host, port); }

// A non-blocking listening socket bound to host:port (port 0 = any free port). A failure
// raises Error(System) naming the address and suggesting another port or port 0.
Fd listen_tcp(const std::string& host, uint16_t port, int backlog);
uint16_t local_port(int fd);

// Connects to host:port, retrying refused/unreachable attempts with a growing pause until the
// deadline (the server may start later). Raises Error(Timeout) naming the endpoint and the
// last failure. The returned socket is non-blocking with TCP_NODELAY.
Fd connect_tcp(const std::string& host, uint16_t port, const Deadline& deadline);

using spmd::set_nonblocking;
// Blocking mode with per-operation timeouts (SO_RCVTIMEO/SO_SNDTIMEO): one syscall per
// receive instead of poll + recv. send_all/recv_* stay correct: a timed-out operation reports
// EAGAIN, after which they wait on the deadline with poll.
void set_blocking_with_timeout(int fd, std::chrono::milliseconds timeout);
void set_nodelay(int fd);
// TCP keep-alive probes after a minute of silence: a peer whose machine died (no FIN, no RST)
// is noticed within about two minutes, even on a connection that waits for nothing.
void set_keepalive(int fd);

enum class Io { Ok, Timeout, Closed };
// Sends all n bytes / receives exactly n bytes before the deadline. Closed = the peer went
// away (EOF, reset, broken pipe); `err` holds the errno (0 for an orderly EOF).
Io send_all(int fd, const uint8_t* data, size_t n, const Deadline& deadline, int& err);
Io recv_exact(int fd, uint8_t* data, size_t n, const Deadline& deadline, int& err);
// Receives between 1 and n bytes (whatever is available once readable).
Io recv_some(int fd, uint8_t* data, size_t n, size_t& got, const Deadline& deadline, int& err);

}  // namespace spmd::net
