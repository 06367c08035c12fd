// A process that hosts the store (rank 0 without a launcher) keeps it a little while other
// clients are still connected: a rank that fails fast (say, on a Mismatch) must not take the
// store away from peers that still need it to learn why (SPMD_STORE_LINGER seconds, default 5).
#pragma once

#include "spmd/store.hpp"

namespace spmd::store {

// Returns once `server` has no connections left, or after SPMD_STORE_LINGER seconds.
void linger_while_connected(const TcpStoreServer& server);

}  // namespace spmd::store
