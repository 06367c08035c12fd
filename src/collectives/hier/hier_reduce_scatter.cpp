// Hierarchical reduce_scatter: each host reduces its ranks' whole inputs at its leader through
// shared memory (laid out host by host, HostOrder), the leaders reduce-scatter by host over TCP
// (leader h ends with the sum of host h's ranks' blocks: the network carries one partial sum per
// host, not per rank), and each leader scatters its host's blocks through shared memory.
#include <cstring>

#include "collectives/hier/hier_common.hpp"

namespace spmd::algo {

void hier_reduce_scatter(AlgoContext& c, const CollArgs& a) {
  const DType dtype = a.data.dtype;
  const size_t block = a.data.bytes(), es = dtype_size(dtype);
  const hier::HostOrder order(c.loc, block);
  char* all = hier::scratch(0, order.total());
  for (int r = 0; r < c.loc.size(); ++r)
    if (block) std::memcpy(all + order.of_rank(r), a.blocks[static_cast<size_t>(r)].data, block);
  hier::host_reduce(c, 1, TensorView(all, order.total() / es, dtype), 0, a.fn);

  const int host = c.loc.host();
  char* part = hier::scratch(1, order.host_bytes(host));  // this host's blocks, summed over every host
  if (c.loc.is_leader()) {
    SubTransport leaders(c.net, c.loc.leaders());
    std::vector<TensorView> by_host = order.hosts(all, dtype);
    reduce_scatter_ring(leaders, c.op, by_host, TensorView(part, order.host_bytes(host) / es, dtype), a.fn);
  }
  if (c.loc.local_size() == 1) {
    if (block) std::memcpy(a.data.data, part, block);
    return;
  }
  std::vector<TensorView> blocks = order.host_blocks(part, host);
  CollArgs s;
  s.data = TensorView(a.data.data, block, DType::U8);
  s.blocks = blocks;
  s.root = 0;
  hier::on_host(c, 2, s, c.cma && block >= hier::kLocalSingleCopyBlocks ? shm_cma_scatter : shm_flat_scatter);
}

}  // namespace spmd::algo
