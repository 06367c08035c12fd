// The one TCP connect of spmd: resolve, then a non-blocking connect per address bounded by a
// Deadline, optionally retried until the deadline. The store client and the TCP transport
// both connect through it; they differ only in what a refusal means (ConnectOptions::retry).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/deadline.hpp"
#include "common/fd.hpp"

namespace spmd::net {

struct ConnectOptions {
  // What is being done, to start every error message: "connecting to rank 3",
  // "connecting to the store server". The host:port follows it.
  std::string what = "connecting";
  // What the reader should do about a failure, ending the message after "; ": "check that
  // the server ... is running", "the peer process probably exited; look for its error".
  std::string advice;
  // Retry until the deadline whatever fails (refused, unreachable, a name that does not
  // resolve yet), with a pause growing from 10 ms to 500 ms. For servers that may start after
  // their clients (the store; DNS may lag behind a booting node). Without it, the first
  // failure is final: the transport's peers listen before they publish their address, so a
  // refusal there means the peer is gone, and waiting out the deadline would only hide it.
  bool retry = false;
  // Asked before each pause between retries: true gives up at once (PeerLost), for a client
  // abandoned from another thread (TcpStore::interrupt) while it waits for a server.
  std::function<bool()> abandoned;
  // Called on every new socket before connect(): buffer sizes must be set before the
  // handshake for the TCP window scale to cover them (the transport's tune_connection).
  std::function<void(int fd)> prepare;
};

// Connects to host:port before the deadline. The socket returned is non-blocking, close-on-
// exec, with TCP_NODELAY (and whatever `prepare` set). Errors, each naming what, host:port,
// the last failure and the advice:
//   Timeout          the deadline passed (retrying, or waiting for the handshake);
//   PeerLost         without retry: every address refused or was unreachable;
//   InvalidArgument  without retry: the host name does not resolve;
//   System           a socket could not be created (e.g. out of descriptors).
Fd connect_tcp(const std::string& host, uint16_t port, const Deadline& deadline, const ConnectOptions& options);

}  // namespace spmd::net
