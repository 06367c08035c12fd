// The one poll wait for a single descriptor against a Deadline, for the store's client and
// the TCP transport (connect handshakes, blocking exchanges on non-blocking sockets).
#pragma once

#include "common/deadline.hpp"

namespace spmd::net {

// Waits until fd is ready for `events` (POLLIN, POLLOUT) or the deadline passes. Returns
// true when poll reports the fd (an error or hang-up counts: the next read/write tells which),
// false only once the deadline has passed. EINTR is retried; another poll failure raises
// Error(System).
bool wait_fd(int fd, short events, const Deadline& deadline);

}  // namespace spmd::net
