// The store server's settings: its options, else SPMD_STORE_* from the environment, else
// defaults. The connection cap follows the open-files limit (open_files_limit.cpp raises it).
#include "store/server_config.hpp"

#include <algorithm>

#include "common/byte_size.hpp"
#include "common/env.hpp"
#include "spmd/error.hpp"
#include "store/open_files_limit.hpp"

namespace spmd::store {

namespace {

constexpr size_t kDefaultMaxConnections = 16384;
constexpr size_t kReservedFds = 64;  // for everything else the process opens

// SPMD_STORE_MAX_MEMORY: a positive size in the one byte-size grammar (common/byte_size.hpp:
// "1048576", "512M", "2G").
size_t parse_memory_limit(const char* name, const std::string& text) {
  uint64_t n = parse_byte_size(text, name);
  if (n == 0)
    raise(ErrorKind::InvalidArgument, std::string(name) + "=" + text +
                                          " is not a positive size; give bytes, or e.g. 512M or 2G");
  return static_cast<size_t>(n);
}

std::chrono::milliseconds env_seconds(const char* name, std::chrono::milliseconds fallback) {
  auto s = env::get_seconds(name);
  return s ? std::chrono::milliseconds(static_cast<int64_t>(*s * 1000)) : fallback;
}

}  // namespace

ServerConfig server_config(const TcpStoreServerOptions& o, const std::string& where) {
  ServerConfig c;
  c.limits.max_key_bytes = o.max_key_bytes;
  c.limits.max_value_bytes = o.max_value_bytes;
  c.token = o.token;
  c.where = where;
  if (o.max_memory_bytes) {
    c.max_memory_bytes = *o.max_memory_bytes;
  } else if (auto v = env::get("SPMD_STORE_MAX_MEMORY")) {
    c.max_memory_bytes = parse_memory_limit("SPMD_STORE_MAX_MEMORY", *v);
  }
  size_t fds = raise_open_files_limit();
  size_t fd_room = fds > 2 * kReservedFds ? fds - kReservedFds : kReservedFds;
  if (o.max_connections) {
    c.max_connections = *o.max_connections;
  } else if (auto v = env::get_int("SPMD_STORE_MAX_CONNECTIONS")) {
    c.max_connections = static_cast<size_t>(std::max<int64_t>(*v, 1));
  } else {
    c.max_connections = std::min(kDefaultMaxConnections, fd_room);
  }
  c.idle_timeout = o.idle_timeout ? *o.idle_timeout : env_seconds("SPMD_STORE_IDLE_TIMEOUT", c.idle_timeout);
  // Clients probe a connection that sat idle for a fraction of a second before using it
  // again; a shorter server timeout could race with them.
  if (c.idle_timeout.count() > 0) c.idle_timeout = std::max(c.idle_timeout, std::chrono::milliseconds(1000));
  c.auth_timeout = o.auth_timeout ? *o.auth_timeout : env_seconds("SPMD_STORE_AUTH_TIMEOUT", c.auth_timeout);
  return c;
}

}  // namespace spmd::store
