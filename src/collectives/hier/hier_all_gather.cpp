// Hierarchical all_gather: each host gathers its ranks' blocks at its leader through shared
// memory, the leaders all-gather whole hosts' blocks over TCP (one message per host and step,
// around a ring or Bruck's log2 H steps as the cost model prices them: the network carries
// each block once per link, not once per rank), and each leader broadcasts every block to its
// host through shared memory. The blocks travel host by host in one scratch buffer (HostOrder)
// and land in the caller's outputs at the end.
#include <cstring>

#include "collectives/cost_model.hpp"
#include "collectives/hier/hier_common.hpp"

namespace spmd::algo {

void hier_all_gather(AlgoContext& c, const CollArgs& a) {
  const size_t block = a.data.bytes();
  const hier::HostOrder order(c.loc, block);
  char* all = hier::scratch(0, order.total());
  const int host = c.loc.host();
  const bool single_copy = c.cma && block >= hier::kLocalSingleCopyBlocks;

  std::vector<TensorView> mine = order.host_blocks(all + order.host_start(host), host);
  if (c.loc.local_size() == 1) {
    if (block) std::memcpy(mine[0].data, a.data.data, block);
  } else {
    CollArgs g;
    g.data = TensorView(a.data.data, block, DType::U8);
    g.blocks = mine;
    g.root = 0;
    hier::on_host(c, 1, g, single_copy ? shm_cma_gather : shm_flat_gather);
  }
  if (c.loc.is_leader()) {
    SubTransport leaders(c.net, c.loc.leaders());
    // Bruck's log2 H steps among many hosts while blocks are small, when every host's blocks
    // are the same size (it sends several at once); the ring otherwise.
    const bool even = c.loc.max_ranks_per_host() * c.loc.host_count() == c.loc.size();
    const size_t host_bytes = order.host_bytes(host);
    if (even && cheapest_among_hosts(Collective::AllGather, host_bytes, leaders.size(), model_or_default(c.model)) == "bruck")
      allgather_bruck(leaders, c.op, order.hosts(all, DType::U8));
    else
      allgather_ring(leaders, c.op, order.hosts(all, DType::U8));
  }
  hier::host_broadcast(c, 2, TensorView(all, order.total(), DType::U8), 0);
  for (int r = 0; r < c.loc.size(); ++r) {
    char* out = static_cast<char*>(a.blocks[static_cast<size_t>(r)].data);
    if (block) std::memcpy(out, all + order.of_rank(r), block);
  }
}

}  // namespace spmd::algo
