// Helpers of the hierarchical algorithms (collectives/hier/): the phase on this host's members
// through shared memory, and the hosts' representatives as a transport of their own.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

#include "collectives/algorithm.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/shm/shm_algorithms.hpp"
#include "transport/sub_transport.hpp"

namespace spmd::algo::hier {

// Bytes from which the local phases read peers' buffers directly (when the ranks may).
constexpr size_t kLocalSingleCopy = 256 << 10;

// Runs a shared-memory algorithm on this host's members (local indices) as phase `phase` of
// the call. Nothing to do when this host has one member.
// Members other than the host's leader wait here while the leader is in the inter-host phase:
// they give up a little after the leader would (timeout/10, 1-30 s later), so that when a
// remote host stalls, the leader's Timeout naming the remote rank reaches them through the
// segment's abort record first, instead of their own Timeout blaming the (healthy) leader.
template <typename Fn>
void on_host(AlgoContext& c, uint16_t phase, const CollArgs& args, Fn&& algorithm) {
  if (!c.shm) return;
  OpContext op = c.op;
  op.phase = phase;
  if (!c.loc.is_leader()) {
    auto margin = std::clamp(op.timeout / 10, std::chrono::milliseconds(1000), std::chrono::milliseconds(30000));
    if (op.deadline.time_point() < Deadline::never().time_point() - margin)
      op.deadline = Deadline::at(op.deadline.time_point() + margin);
  }
  AlgoContext local{op, c.loc, c.net};
  local.shm = c.shm;
  local.cma = c.cma;
  algorithm(local, args);
}

inline void host_reduce(AlgoContext& c, uint16_t phase, TensorView data, int root_local, ReduceFn fn) {
  CollArgs a;
  a.data = data;
  a.root = root_local;
  a.fn = fn;
  on_host(c, phase, a, c.cma && data.bytes() >= kLocalSingleCopy ? shm_cma_reduce : shm_flat_reduce);
}

inline void host_broadcast(AlgoContext& c, uint16_t phase, TensorView data, int root_local) {
  CollArgs a;
  a.data = data;
  a.root = root_local;
  on_host(c, phase, a, c.cma && data.bytes() >= kLocalSingleCopy ? shm_cma_broadcast : shm_flat_broadcast);
}

inline void host_barrier(AlgoContext& c, uint16_t phase) { on_host(c, phase, CollArgs{}, shm_flat_barrier); }

// One group rank per host: `root`'s on the root's host, the host's leader elsewhere.
inline std::vector<int> representatives(const Locality& loc, int root = -1) {
  std::vector<int> reps = loc.leaders();
  if (root >= 0) reps[static_cast<size_t>(loc.host_of[static_cast<size_t>(root)])] = root;
  return reps;
}

// Local index of `group_rank` on its host.
inline int local_index(const Locality& loc, int group_rank) { return loc.local_index_of(group_rank); }

}  // namespace spmd::algo::hier
