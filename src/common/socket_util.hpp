// Socket helpers the store and the TCP transport share.
#pragma once

#include <cstdint>
#include <string>

namespace spmd {

// O_NONBLOCK on fd; raises Error(System) naming the step on failure.
void set_nonblocking(int fd);

// "host:port", with [brackets] around IPv6 literals.
std::string endpoint_text(const std::string& host, uint16_t port);

}  // namespace spmd
