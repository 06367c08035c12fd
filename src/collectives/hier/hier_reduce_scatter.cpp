// Hierarchical reduce_scatter: each host reduces its ranks' whole inputs at its leader through
// shared memory (laid out host by host, HostOrder), the leaders reduce-scatter by host over TCP
// (leader h ends with the sum of host h's ranks' blocks: the network carries one partial sum per
// host, not per rank), and each leader scatters its host's blocks through shared memory.
//
// Pipelined in chunks as hier all_reduce is (hier_pipeline.hpp; the cost model's count): chunk
// k is elements [b_k, b_k+1) of every rank's block, laid out host by host in a region of its
// own, so the host reduces chunk k + 1 and scatters chunk k - 1 while the leaders reduce-scatter
// chunk k (3 x 2 over 1 Gbit/s, 16 MiB: the local phases took ~25 ms of ~121 in one chunk).
#include <cstring>

#include "collectives/hier/hier_common.hpp"
#include "collectives/hier/hier_pipeline.hpp"

namespace spmd::algo {

void hier_reduce_scatter(AlgoContext& c, const CollArgs& a) {
  const DType dtype = a.data.dtype;
  const size_t es = dtype_size(dtype), count = a.data.count, ranks = static_cast<size_t>(c.loc.size());
  const int chunks = hier::chunks_of(c, Collective::ReduceScatter, a.data.bytes() * ranks, count);
  const int host = c.loc.host();
  const size_t members = static_cast<size_t>(c.loc.local_size());
  char* all = hier::scratch(0, a.data.bytes() * ranks);  // chunk by chunk, each host by host
  char* part = hier::scratch(1, a.data.bytes() * members);  // this host's blocks, summed over every host
  // Chunk k: its first element in every block, its elements per block, its regions' layout.
  auto first = [&](int k) { return segment_begin(count, chunks, k); };
  auto length = [&](int k) { return first(k + 1) - first(k); };
  auto order = [&](int k) { return hier::HostOrder(c.loc, length(k) * es); };
  auto phase = [](int k, int which) { return static_cast<uint16_t>(1 + 2 * k + which); };

  auto pack_and_reduce = [&](int k) {
    const hier::HostOrder o = order(k);
    char* region = all + ranks * es * first(k);
    for (int r = 0; r < c.loc.size(); ++r) {
      const char* input = static_cast<const char*>(a.blocks[static_cast<size_t>(r)].data) + first(k) * es;
      if (length(k)) std::memcpy(region + o.of_rank(r), input, length(k) * es);
    }
    hier::host_reduce(c, phase(k, 0), TensorView(region, ranks * length(k), dtype), 0, a.fn);
  };
  auto among_hosts = [&](int k) {
    const hier::HostOrder o = order(k);
    SubTransport leaders(c.net, c.loc.leaders());
    std::vector<TensorView> by_host = o.hosts(all + ranks * es * first(k), dtype);
    TensorView mine(part + members * es * first(k), o.host_bytes(host) / es, dtype);
    reduce_scatter_ring(leaders, c.op, by_host, mine, a.fn);
  };
  auto scatter = [&](int k) {
    char* out = static_cast<char*>(a.data.data) + first(k) * es;
    char* host_part = part + members * es * first(k);
    if (members == 1) {
      if (length(k)) std::memcpy(out, host_part, length(k) * es);
      return;
    }
    const std::vector<TensorView> blocks = order(k).host_blocks(host_part, host);  // s.blocks views it
    CollArgs s;
    s.data = TensorView(out, length(k) * es, DType::U8);
    s.blocks = blocks;
    s.root = 0;
    hier::on_host(c, phase(k, 1), s,
                  c.cma && length(k) * es >= hier::kLocalSingleCopyBlocks ? shm_cma_scatter : shm_flat_scatter);
  };
  hier::pipeline(c.loc.is_leader(), chunks, pack_and_reduce, among_hosts, scatter);
}

}  // namespace spmd::algo
