// Hierarchical gather and scatter: one rank per host (the root on its host, the leader
// elsewhere) holds its host's blocks, laid out host by host (HostOrder); the representatives
// exchange whole hosts' blocks with the root over TCP (after an agreement round, since the
// senders never hear from the root), and shared memory moves blocks within each host. A last
// host barrier (gather) or the scatter's own local phase keeps a rank from returning before its
// host's representative took part in the checked inter-host phase.
#include <cstring>

#include "collectives/hier/hier_common.hpp"

namespace spmd::algo {

namespace {

struct Reps {
  explicit Reps(const AlgoContext& c, int root) : all(hier::representatives(c.loc, root)) {
    host = c.loc.host();
    rep = all[static_cast<size_t>(host)];
    root_host = c.loc.host_of[static_cast<size_t>(root)];
  }
  std::vector<int> all;
  int host, rep, root_host;
};

}  // namespace

void hier_gather(AlgoContext& c, const CollArgs& a) {
  const Reps reps(c, a.root);
  const size_t block = a.data.bytes();
  const hier::HostOrder order(c.loc, block);
  const bool i_root = c.loc.rank == a.root, i_rep = c.loc.rank == reps.rep;
  // The root holds every host's blocks; another representative its own host's.
  char* buffer = hier::scratch(0, i_root ? order.total() : i_rep ? order.host_bytes(reps.host) : 0);
  char* host_base = buffer + (i_root ? order.host_start(reps.host) : 0);
  if (c.loc.local_size() == 1) {
    if (block) std::memcpy(host_base, a.data.data, block);
  } else {
    std::vector<TensorView> local = i_rep ? order.host_blocks(host_base, reps.host) : std::vector<TensorView>{};
    CollArgs g;
    g.data = TensorView(a.data.data, block, DType::U8);
    g.blocks = local;
    g.root = hier::local_index(c.loc, reps.rep);
    hier::on_host(c, 1, g, c.cma && block >= hier::kLocalSingleCopyBlocks ? shm_cma_gather : shm_flat_gather);
  }
  if (i_rep) {
    SubTransport view(c.net, reps.all);
    barrier_dissemination(view, c.op);
    std::vector<TensorView> by_host = i_root ? order.hosts(buffer, DType::U8) : std::vector<TensorView>{};
    gather_linear(view, c.op, TensorView(host_base, order.host_bytes(reps.host), DType::U8), by_host, reps.root_host);
  }
  if (i_root)
    for (int r = 0; r < c.loc.size(); ++r)
      if (block) std::memcpy(a.blocks[static_cast<size_t>(r)].data, buffer + order.of_rank(r), block);
  hier::host_barrier(c, 2);
}

void hier_scatter(AlgoContext& c, const CollArgs& a) {
  const Reps reps(c, a.root);
  const size_t block = a.data.bytes();
  const hier::HostOrder order(c.loc, block);
  const bool i_root = c.loc.rank == a.root, i_rep = c.loc.rank == reps.rep;
  char* buffer = hier::scratch(0, i_root ? order.total() : i_rep ? order.host_bytes(reps.host) : 0);
  char* host_base = buffer + (i_root ? order.host_start(reps.host) : 0);
  if (i_root)
    for (int r = 0; r < c.loc.size(); ++r)
      if (block) std::memcpy(buffer + order.of_rank(r), a.blocks[static_cast<size_t>(r)].data, block);
  if (i_rep) {
    SubTransport view(c.net, reps.all);
    barrier_dissemination(view, c.op);
    std::vector<TensorView> by_host = i_root ? order.hosts(buffer, DType::U8) : std::vector<TensorView>{};
    scatter_linear(view, c.op, by_host, TensorView(host_base, order.host_bytes(reps.host), DType::U8), reps.root_host);
  }
  if (c.loc.local_size() == 1) {
    if (block) std::memcpy(a.data.data, host_base, block);
    return;
  }
  std::vector<TensorView> local = i_rep ? order.host_blocks(host_base, reps.host) : std::vector<TensorView>{};
  CollArgs s;
  s.data = TensorView(a.data.data, block, DType::U8);
  s.blocks = local;
  s.root = hier::local_index(c.loc, reps.rep);
  hier::on_host(c, 2, s, c.cma && block >= hier::kLocalSingleCopyBlocks ? shm_cma_scatter : shm_flat_scatter);
}

}  // namespace spmd::algo
