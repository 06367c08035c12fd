#include "store/server_linger.hpp"

#include <chrono>
#include <thread>

#include "common/deadline.hpp"
#include "common/env.hpp"
#include "common/log.hpp"

namespace spmd::store {

void linger_while_connected(const TcpStoreServer& server) {
  auto secs = env::get_seconds("SPMD_STORE_LINGER").value_or(5.0);
  Deadline until(std::chrono::milliseconds(static_cast<int64_t>(secs * 1000)));
  size_t others = server.stats().connections;
  if (others > 0) SPMD_LOG(Info) << "store server: waiting up to " << secs << " s for " << others << " client(s) to leave";
  while (server.stats().connections > 0 && !until.expired())
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polls a counter; nothing to wait on
}

}  // namespace spmd::store
