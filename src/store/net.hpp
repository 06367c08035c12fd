// The store's own TCP helpers: bind/listen, and deadline-bounded send/receive on its
// connections. What the transport needs too (connect with a deadline and retry, the poll
// wait, socket options, host:port text) is in common/net/ and common/socket_util.hpp, whose
// names this header brings in. Every fd is an Fd; EINTR goes through retry_eintr.
#pragma once

#include <cstddef>
#include <cstdint>
#include <chrono>
#include <string>

#include "common/deadline.hpp"
#include "common/fd.hpp"
#include "common/net/connect.hpp"
#include "common/net/endpoint.hpp"
#include "common/socket_util.hpp"

namespace spmd::net {

// A non-blocking listening socket bound to host:port (port 0 = any free port). A failure
// raises Error(System) naming the address and suggesting another port or port 0.
Fd listen_tcp(const std::string& host, uint16_t port, int backlog);
uint16_t local_port(int fd);

// How a store client connects (connect_tcp, common/net/connect.hpp): retrying until the
// deadline, since the server (rank 0 or spmdrun) may start after its clients; the advice
// says where the server's address comes from.
ConnectOptions store_connect_options();

// Blocking mode with per-operation timeouts (SO_RCVTIMEO/SO_SNDTIMEO): one syscall per
// receive instead of poll + recv. send_all/recv_* stay correct: a timed-out operation reports
// EAGAIN, after which they wait on the deadline with poll.
void set_blocking_with_timeout(int fd, std::chrono::milliseconds timeout);

enum class Io { Ok, Timeout, Closed };
// Sends all n bytes / receives exactly n bytes before the deadline. Closed = the peer went
// away (EOF, reset, broken pipe); `err` holds the errno (0 for an orderly EOF).
Io send_all(int fd, const uint8_t* data, size_t n, const Deadline& deadline, int& err);
Io recv_exact(int fd, uint8_t* data, size_t n, const Deadline& deadline, int& err);
// Receives between 1 and n bytes (whatever is available once readable).
Io recv_some(int fd, uint8_t* data, size_t n, size_t& got, const Deadline& deadline, int& err);

}  // namespace spmd::net
