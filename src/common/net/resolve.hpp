// Name resolution for TCP sockets: getaddrinfo with its list owned, for listening (passive)
// and connecting. One place, so the store and the transport resolve a host the same way.
#pragma once

#include <netdb.h>

#include <cstdint>
#include <string>

namespace spmd::net {

// Owns getaddrinfo's list.
struct AddrInfo {
  addrinfo* list = nullptr;
  AddrInfo() = default;
  AddrInfo(const AddrInfo&) = delete;
  AddrInfo& operator=(const AddrInfo&) = delete;
  ~AddrInfo() {
    if (list) ::freeaddrinfo(list);
  }
};

// Resolves host:port to stream-socket addresses (IPv4 and IPv6). Passive: for bind. An empty
// host or "*" means every interface when passive, the loopback address otherwise. Returns getaddrinfo's code (0 = ok; gai_strerror
// says why not), so the caller can word the error for what it was doing, or retry.
int resolve(const std::string& host, uint16_t port, bool passive, AddrInfo& out);

}  // namespace spmd::net
