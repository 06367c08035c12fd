// Dissemination barrier: ceil(log2 P) rounds; in round k each rank signals r+2^k and waits for
// r-2^k. After the last round every rank has (transitively) heard from every other. Messages
// are bare frame headers, so the barrier is also checked for mismatched calls.
#include "collectives/algorithms.hpp"

namespace spmd::algo {

void barrier_dissemination(Transport& t, const OpContext& op) {
  const int p = t.size(), r = t.rank();
  for (int k = 1; k < p; k <<= 1) send_recv(t, op, (r + k) % p, nullptr, 0, (r - k + p) % p, nullptr, 0);
}

}  // namespace spmd::algo
