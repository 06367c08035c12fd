// Socket helpers for the TCP transport: tuning, the local address to listen on, connecting
// with a deadline. Every fd is owned by an Fd; EINTR goes through retry_eintr.
#pragma once

#include <cstdint>
#include <string>

#include "common/deadline.hpp"
#include "common/fd.hpp"
#include "common/socket_util.hpp"

namespace spmd::tcp {

// Socket buffer size asked for on every connection (the kernel caps it at
// net.core.{w,r}mem_max unless it can force it): big enough that a ring step of a few MiB
// flows without waiting for the receiver's scheduling.
constexpr int kSocketBufferBytes = 4 << 20;

using spmd::set_nonblocking;
// TCP_NODELAY (latency of small steps) and large send/receive buffers.
void tune_connection(int fd);

// The address this process listens on: SPMD_SOCKET_IFNAME's address if set, else the local
// address that routes to MASTER_ADDR if set, else 127.0.0.1.
std::string choose_listen_address();

// "host:port", with [brackets] for IPv6.
inline std::string format_address(const std::string& host, uint16_t port) { return endpoint_text(host, port); }

// Non-blocking connect with a deadline. On refusal/timeout raises Error(PeerLost/Timeout)
// whose message starts with `what` (e.g. "connecting to rank 3").
Fd connect_to(const std::string& host, uint16_t port, const Deadline& deadline, const std::string& what);

// Connects to a local listener's abstract name (Listener::local), against the deadline.
Fd connect_local(const std::string& name, const Deadline& deadline, const std::string& what);

// Identifies "same kernel and same network namespace" (boot id + netns inode): ranks with
// equal ids can reach each other's abstract Unix sockets. Empty when unknown.
const std::string& local_host_id();

// Waits until fd is readable (POLLIN) or writable (POLLOUT) or the deadline passes; false on
// timeout.
bool wait_fd(int fd, short events, const Deadline& deadline);

}  // namespace spmd::tcp
