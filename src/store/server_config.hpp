// The store server's settings (limits, memory budget, connection cap, timeouts) from its
// options, else SPMD_STORE_MAX_MEMORY / _MAX_CONNECTIONS / _IDLE_TIMEOUT / _AUTH_TIMEOUT, else
// defaults. Raises the process's soft open-files limit to the hard one (once,
// open_files_limit.hpp) to size the connection cap.
#pragma once

#include <string>

#include "spmd/store.hpp"
#include "store/server_core.hpp"

namespace spmd::store {

ServerConfig server_config(const TcpStoreServerOptions& options, const std::string& where);

}  // namespace spmd::store
