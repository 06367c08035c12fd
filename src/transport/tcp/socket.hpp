// Socket helpers for the TCP transport: tuning, the local address to listen on, connecting
// with a deadline (common/net/connect.hpp with the transport's options), local sockets.
// Every fd is owned by an Fd; EINTR goes through retry_eintr.
#pragma once

#include <cstdint>
#include <string>

#include "common/deadline.hpp"
#include "common/fd.hpp"
#include "common/net/endpoint.hpp"
#include "common/net/wait_fd.hpp"

namespace spmd::tcp {

// Socket buffer size asked for on every connection (the kernel caps it at
// net.core.{w,r}mem_max unless it can force it): big enough that a ring step of a few MiB
// flows without waiting for the receiver's scheduling.
constexpr int kSocketBufferBytes = 4 << 20;

// TCP_NODELAY (latency of small steps) and large send/receive buffers.
void tune_connection(int fd);

// The address this process listens on: SPMD_SOCKET_IFNAME's address if set, else
// SPMD_LOCAL_ADDR (set by spmdrun: the address the other nodes reach this node at), else the
// local address that routes to MASTER_ADDR if set, else 127.0.0.1.
std::string choose_listen_address();

// Connects to a peer's listener (net::connect_tcp, no retry: peers listen before they publish
// their address, so a refusal means the peer is gone). Raises Error(PeerLost) on refusal,
// Error(Timeout) when the deadline passes; the message starts with `what` (e.g. "connecting to
// rank 3").
Fd connect_to(const std::string& host, uint16_t port, const Deadline& deadline, const std::string& what);

// Connects to a local listener's abstract name (Listener::local), against the deadline.
Fd connect_local(const std::string& name, const Deadline& deadline, const std::string& what);

}  // namespace spmd::tcp
