// Socket options the store and the TCP transport share. Every one is a single setsockopt or
// fcntl; the tuning ones are best effort (a socket that is not TCP, e.g. a Unix socket in a
// test, simply keeps its defaults).
#pragma once

namespace spmd::net {

// O_NONBLOCK on fd; raises Error(System) naming the step on failure.
void set_nonblocking(int fd);

// TCP_NODELAY: requests and collective steps are small and latency-bound; Nagle's algorithm
// would hold them back waiting for an ACK. Best effort.
void set_nodelay(int fd);

// TCP keep-alive probes after a minute of silence: a peer whose machine died (no FIN, no RST)
// is noticed within about two minutes, even on a connection that waits for nothing. Best effort.
void set_keepalive(int fd);

}  // namespace spmd::net
