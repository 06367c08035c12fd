// Hierarchical all_gather: each host gathers its ranks' blocks at its leader through shared
// memory, the leaders all-gather whole hosts' blocks over TCP (one message per host and step,
// around a ring or Bruck's log2 H steps as the cost model prices them: the network carries
// each block once per link, not once per rank), and each leader broadcasts every block to its
// host through shared memory. The blocks travel host by host in one scratch buffer (HostOrder)
// and land in the caller's outputs at the end.
//
// Pipelined in chunks as hier all_reduce is (hier_pipeline.hpp; the cost model's count): chunk
// k is bytes [b_k, b_k+1) of every rank's block, laid out host by host in a region of its own,
// so the host gathers chunk k + 1 and broadcasts chunk k - 1 while the leaders all-gather chunk
// k (3 x 2 over 1 Gbit/s, 16 MiB: the local phases took ~25 ms of ~126 in one chunk).
#include <cstring>

#include "collectives/cost_model.hpp"
#include "collectives/hier/hier_common.hpp"
#include "collectives/hier/hier_pipeline.hpp"

namespace spmd::algo {

void hier_all_gather(AlgoContext& c, const CollArgs& a) {
  const size_t block = a.data.bytes(), ranks = static_cast<size_t>(c.loc.size());
  const int chunks = hier::chunks_of(c, Collective::AllGather, block * ranks, block);
  char* all = hier::scratch(0, block * ranks);  // chunk by chunk, each host by host
  const int host = c.loc.host();
  // Chunk k: its first byte in every block, its bytes per block, its region and the region's layout.
  auto first = [&](int k) { return segment_begin(block, chunks, k); };
  auto length = [&](int k) { return first(k + 1) - first(k); };
  auto order = [&](int k) { return hier::HostOrder(c.loc, length(k)); };
  auto region = [&](int k) { return all + ranks * first(k); };
  auto phase = [](int k, int which) { return static_cast<uint16_t>(1 + 2 * k + which); };

  auto gather = [&](int k) {
    const hier::HostOrder o = order(k);
    const std::vector<TensorView> mine = o.host_blocks(region(k) + o.host_start(host), host);  // g.blocks views it
    const char* input = static_cast<const char*>(a.data.data) + first(k);
    if (c.loc.local_size() == 1) {
      if (length(k)) std::memcpy(mine[0].data, input, length(k));
      return;
    }
    CollArgs g;
    g.data = TensorView(const_cast<char*>(input), length(k), DType::U8);
    g.blocks = mine;
    g.root = 0;
    hier::on_host(c, phase(k, 0), g,
                  c.cma && length(k) >= hier::kLocalSingleCopyBlocks ? shm_cma_gather : shm_flat_gather);
  };
  auto among_hosts = [&](int k) {
    const hier::HostOrder o = order(k);
    SubTransport leaders(c.net, c.loc.leaders());
    const std::vector<TensorView> by_host = o.hosts(region(k), DType::U8);
    // Bruck's log2 H steps among many hosts while blocks are small, when every host's blocks
    // are the same size (it sends several at once); the ring otherwise.
    const bool even = c.loc.max_ranks_per_host() * c.loc.host_count() == c.loc.size();
    if (even && cheapest_among_hosts(Collective::AllGather, o.host_bytes(host), leaders.size(),
                                     model_or_default(c.model)) == "bruck")
      allgather_bruck(leaders, c.op, by_host);
    else
      allgather_ring(leaders, c.op, by_host);
  };
  auto broadcast = [&](int k) {
    const hier::HostOrder o = order(k);
    hier::host_broadcast(c, phase(k, 1), TensorView(region(k), o.total(), DType::U8), 0);
    for (int r = 0; r < c.loc.size(); ++r)
      if (length(k))
        std::memcpy(static_cast<char*>(a.blocks[static_cast<size_t>(r)].data) + first(k), region(k) + o.of_rank(r),
                    length(k));
  };
  hier::pipeline(c.loc.is_leader(), chunks, gather, among_hosts, broadcast);
}

}  // namespace spmd::algo
