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

// Where a gather's or scatter's blocks live on this rank: the root holds every host's blocks
// (host by host), another representative its own host's, other ranks none.
struct Place {
  Place(const AlgoContext& c, const CollArgs& a)
      : reps(hier::representatives(c.loc, a.root)),
        host(c.loc.host()),
        rep(reps[static_cast<size_t>(host)]),
        root_host(c.loc.host_of[static_cast<size_t>(a.root)]),
        block(a.data.bytes()),
        order(c.loc, block),
        i_root(c.loc.rank == a.root),
        i_rep(c.loc.rank == rep),
        buffer(hier::scratch(0, i_root ? order.total() : i_rep ? order.host_bytes(host) : 0)),
        host_base(buffer + (i_root ? order.host_start(host) : 0)) {}

  // This host's blocks (at the representative) as the local phase's blocks.
  std::vector<TensorView> local_blocks() const {
    return i_rep ? order.host_blocks(host_base, host) : std::vector<TensorView>{};
  }
  // Every host's blocks (at the root) and this host's, for the representatives' phase.
  std::vector<TensorView> by_host() const { return i_root ? order.hosts(buffer, DType::U8) : std::vector<TensorView>{}; }
  TensorView this_host() const { return TensorView(host_base, order.host_bytes(host), DType::U8); }
  // The shared-memory phase on this host, rooted at its representative.
  void on_host(AlgoContext& c, uint16_t phase, const CollArgs& a, AlgoFn flat, AlgoFn single_copy) const {
    std::vector<TensorView> local = local_blocks();
    CollArgs h;
    h.data = TensorView(a.data.data, block, DType::U8);
    h.blocks = local;
    h.root = hier::local_index(c.loc, rep);
    hier::on_host(c, phase, h, c.cma && block >= hier::kLocalSingleCopyBlocks ? single_copy : flat);
  }

  std::vector<int> reps;
  int host, rep, root_host;
  size_t block;
  hier::HostOrder order;
  bool i_root, i_rep;
  char* buffer;
  char* host_base;
};

}  // namespace

void hier_gather(AlgoContext& c, const CollArgs& a) {
  const Place at(c, a);
  if (c.loc.local_size() == 1) {
    if (at.block) std::memcpy(at.host_base, a.data.data, at.block);
  } else {
    at.on_host(c, 1, a, shm_flat_gather, shm_cma_gather);
  }
  if (at.i_rep) {
    SubTransport view(c.net, at.reps);
    barrier_dissemination(view, c.op);
    gather_linear(view, c.op, at.this_host(), at.by_host(), at.root_host);
  }
  if (at.i_root)
    for (int r = 0; r < c.loc.size(); ++r)
      if (at.block) std::memcpy(a.blocks[static_cast<size_t>(r)].data, at.buffer + at.order.of_rank(r), at.block);
  hier::host_barrier(c, 2);
}

void hier_scatter(AlgoContext& c, const CollArgs& a) {
  const Place at(c, a);
  if (at.i_root)
    for (int r = 0; r < c.loc.size(); ++r)
      if (at.block) std::memcpy(at.buffer + at.order.of_rank(r), a.blocks[static_cast<size_t>(r)].data, at.block);
  if (at.i_rep) {
    SubTransport view(c.net, at.reps);
    barrier_dissemination(view, c.op);
    scatter_linear(view, c.op, at.by_host(), at.this_host(), at.root_host);
  }
  if (c.loc.local_size() == 1) {
    if (at.block) std::memcpy(a.data.data, at.host_base, at.block);
    return;
  }
  at.on_host(c, 2, a, shm_flat_scatter, shm_cma_scatter);
}

}  // namespace spmd::algo
