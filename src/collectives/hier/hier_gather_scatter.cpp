// Hierarchical gather and scatter: one rank per host (the root on its host, the leader
// elsewhere) holds its host's blocks, laid out host by host (HostOrder); the representatives
// exchange whole hosts' blocks with the root over TCP (after an agreement round, since the
// senders never hear from the root), and shared memory moves blocks within each host. A last
// host barrier (gather) or the scatter's own local phase keeps a rank from returning before its
// host's representative took part in the checked inter-host phase.
//
// Pipelined in chunks as hier all_gather is (hier_pipeline.hpp; the cost model's count): chunk
// k is bytes [b_k, b_k+1) of every rank's block, laid out host by host in a region of its own,
// so the representatives move chunk k among hosts while their hosts gather chunk k + 1 or
// scatter chunk k - 1.
#include <cstring>

#include "collectives/hier/hier_common.hpp"
#include "collectives/hier/hier_pipeline.hpp"

namespace spmd::algo {

namespace {

// Where a gather's or scatter's blocks live on this rank, chunk by chunk: the root holds every
// host's blocks (each chunk's region host by host), another representative its own host's,
// other ranks none.
struct Place {
  Place(const AlgoContext& c, const CollArgs& a, Collective coll)
      : loc(c.loc),
        reps(hier::representatives(c.loc, a.root)),
        host(c.loc.host()),
        rep(reps[static_cast<size_t>(host)]),
        root_host(c.loc.host_of[static_cast<size_t>(a.root)]),
        block(a.data.bytes()),
        ranks(static_cast<size_t>(c.loc.size())),
        members(static_cast<size_t>(c.loc.local_size())),
        i_root(c.loc.rank == a.root),
        i_rep(c.loc.rank == rep),
        chunks(hier::chunks_of(c, coll, block * ranks, block)),
        buffer(hier::scratch(0, i_root ? block * ranks : i_rep ? block * members : 0)) {}

  // Chunk k: its first byte in every block, its bytes per block, its region's layout and start.
  size_t first(int k) const { return segment_begin(block, chunks, k); }
  size_t length(int k) const { return first(k + 1) - first(k); }
  hier::HostOrder order(int k) const { return hier::HostOrder(loc, length(k)); }
  char* region(int k) const { return buffer + (i_root ? ranks : members) * first(k); }
  // This host's blocks of chunk k (at the representative).
  char* host_part(int k) const { return region(k) + (i_root ? order(k).host_start(host) : 0); }
  // Every host's blocks (at the root) and this host's, for the representatives' phase.
  std::vector<TensorView> by_host(int k) const {
    return i_root ? order(k).hosts(region(k), DType::U8) : std::vector<TensorView>{};
  }
  TensorView this_host(int k) const { return TensorView(host_part(k), order(k).host_bytes(host), DType::U8); }
  // Chunk k of this rank's own block.
  char* own(const CollArgs& a, int k) const { return static_cast<char*>(a.data.data) + first(k); }
  // The representatives' phase among hosts for chunk k (an agreement round before the first).
  template <typename Move>
  void among_hosts(AlgoContext& c, int k, Move move) const {
    SubTransport view(c.net, reps);
    if (k == 0) barrier_dissemination(view, c.op);
    move(view);
  }
  // The shared-memory phase on this host for chunk k, rooted at its representative (one member:
  // a copy).
  void on_host(AlgoContext& c, uint16_t phase, const CollArgs& a, int k, bool gather, AlgoFn flat,
               AlgoFn single_copy) const {
    if (members == 1) {
      if (length(k)) gather ? std::memcpy(host_part(k), own(a, k), length(k)) : std::memcpy(own(a, k), host_part(k), length(k));
      return;
    }
    const std::vector<TensorView> local = i_rep ? order(k).host_blocks(host_part(k), host) : std::vector<TensorView>{};
    CollArgs h;
    h.data = TensorView(own(a, k), length(k), DType::U8);
    h.blocks = local;  // a span: `local` outlives the call
    h.root = hier::local_index(loc, rep);
    hier::on_host(c, phase, h, c.cma && length(k) >= hier::kLocalSingleCopyBlocks ? single_copy : flat);
  }

  const Locality& loc;
  std::vector<int> reps;
  int host, rep, root_host;
  size_t block, ranks, members;
  bool i_root, i_rep;
  int chunks;
  char* buffer;
};

// The root's copies between the callers' blocks and chunk k's host-ordered region.
void at_root(const Place& at, const CollArgs& a, int k, bool unpack) {
  if (!at.i_root || !at.length(k)) return;
  const hier::HostOrder o = at.order(k);
  for (int r = 0; r < static_cast<int>(at.ranks); ++r) {
    char* caller = static_cast<char*>(a.blocks[static_cast<size_t>(r)].data) + at.first(k);
    char* ordered = at.region(k) + o.of_rank(r);
    unpack ? std::memcpy(caller, ordered, at.length(k)) : std::memcpy(ordered, caller, at.length(k));
  }
}

}  // namespace

void hier_gather(AlgoContext& c, const CollArgs& a) {
  const Place at(c, a, Collective::Gather);
  hier::pipeline(
      at.i_rep, at.chunks,
      [&](int k) { at.on_host(c, static_cast<uint16_t>(1 + k), a, k, true, shm_flat_gather, shm_cma_gather); },
      [&](int k) {
        at.among_hosts(c, k, [&](SubTransport& view) {
          gather_linear(view, c.op, at.this_host(k), at.by_host(k), at.root_host);
        });
      },
      [&](int k) { at_root(at, a, k, true); });
  hier::host_barrier(c, static_cast<uint16_t>(1 + at.chunks));
}

void hier_scatter(AlgoContext& c, const CollArgs& a) {
  const Place at(c, a, Collective::Scatter);
  hier::pipeline(
      at.i_rep, at.chunks, [&](int k) { at_root(at, a, k, false); },
      [&](int k) {
        at.among_hosts(c, k, [&](SubTransport& view) {
          scatter_linear(view, c.op, at.by_host(k), at.this_host(k), at.root_host);
        });
      },
      [&](int k) { at.on_host(c, static_cast<uint16_t>(1 + k), a, k, false, shm_flat_scatter, shm_cma_scatter); });
}

}  // namespace spmd::algo
