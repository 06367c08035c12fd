// Hierarchical all_reduce for groups spanning hosts: each host reduces to its leader through
// shared memory, the leaders all-reduce over TCP (recursive doubling for small vectors, the
// ring for large ones), and each leader broadcasts the result to its host through shared
// memory. Inter-host traffic is one vector per host instead of one per rank.
#include "collectives/hier/hier_common.hpp"

namespace spmd::algo {

namespace {
constexpr size_t kLeadersRing = 64 << 10;  // below: latency-bound among the leaders
}

void hier_all_reduce(AlgoContext& c, const CollArgs& a) {
  hier::host_reduce(c, 1, a.data, 0, a.fn);
  if (c.loc.is_leader()) {
    SubTransport leaders(c.net, c.loc.leaders());
    if (a.data.bytes() < kLeadersRing)
      allreduce_recursive_doubling(leaders, c.op, a.data, a.fn);
    else
      allreduce_ring(leaders, c.op, a.data, a.fn);
  }
  hier::host_broadcast(c, 2, a.data, 0);
}

}  // namespace spmd::algo
