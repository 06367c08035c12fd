// Hierarchical reduce: each host reduces to its representative (the root on the root's host,
// the leader elsewhere) through shared memory, the representatives reduce to the root over TCP
// (binomial tree, after an agreement round), and a last shared-memory barrier lets the other
// ranks return only once their representative took part. Inputs of ranks other than the root
// stay untouched (a representative reduces into a scratch copy).
#include <cstring>
#include <optional>
#include <vector>

#include "collectives/hier/hier_common.hpp"
#include "collectives/kept_scratch.hpp"

namespace spmd::algo {

void hier_reduce(AlgoContext& c, const CollArgs& a) {
  std::vector<int> reps = hier::representatives(c.loc, a.root);
  const int rep = reps[static_cast<size_t>(c.loc.host())];
  const bool i_rep = rep == c.loc.rank, i_root = a.root == c.loc.rank;
  thread_local std::vector<char> kept;
  std::optional<KeptScratch> scratch;
  TensorView mine = a.data;
  if (i_rep && !i_root) {  // our partial result must not overwrite our input
    scratch.emplace(kept, a.data.bytes());
    if (a.data.bytes() != 0) std::memcpy(scratch->data(), a.data.data, a.data.bytes());  // may be null
    mine.data = scratch->data();
  }
  hier::host_reduce(c, 1, mine, hier::local_index(c.loc, rep), a.fn);
  if (i_rep) {
    SubTransport view(c.net, reps);
    barrier_dissemination(view, c.op);
    reduce_binomial(view, c.op, mine, c.loc.host_of[static_cast<size_t>(a.root)], a.fn);
  }
  hier::host_barrier(c, 2);
}

void hier_barrier(AlgoContext& c, const CollArgs&) {
  hier::host_barrier(c, 1);
  if (c.loc.is_leader()) {
    SubTransport leaders(c.net, c.loc.leaders());
    barrier_dissemination(leaders, c.op);
  }
  hier::host_barrier(c, 2);
}

}  // namespace spmd::algo
