// Hierarchical reduce: each host reduces to its representative (the root on the root's host,
// the leader elsewhere) through shared memory, the representatives reduce to the root over TCP
// (binomial tree or ring, the cost model's cheapest, after an agreement round), and a last
// shared-memory barrier lets the other ranks return only once their representative took part.
// Inputs of ranks other than the root stay untouched (a representative reduces into a scratch
// copy).
//
// Pipelined in chunks as hier all_reduce is (hier_pipeline.hpp; the cost model's count): the
// representatives reduce chunk k among hosts on a thread of their own while their hosts reduce
// chunk k + 1.
#include <cstring>
#include <optional>
#include <vector>

#include "collectives/cost_model.hpp"
#include "collectives/hier/hier_common.hpp"
#include "collectives/hier/hier_pipeline.hpp"
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
  const NetModel& model = model_or_default(c.model);
  const int chunks = hier::chunks_of(c, Collective::Reduce, mine.bytes(), mine.count);
  const int rep_local = hier::local_index(c.loc, rep), root_index = c.loc.host_of[static_cast<size_t>(a.root)];
  hier::pipeline(
      i_rep, chunks,
      [&](int k) { hier::host_reduce(c, static_cast<uint16_t>(1 + k), hier::chunk_of(mine, chunks, k), rep_local, a.fn); },
      [&](int k) {
        SubTransport view(c.net, reps);
        if (k == 0) barrier_dissemination(view, c.op);
        const TensorView part = hier::chunk_of(mine, chunks, k);
        if (cheapest_among_hosts(Collective::Reduce, part.bytes(), view.size(), model) == "ring")
          reduce_ring(view, c.op, part, root_index, a.fn);
        else
          reduce_binomial(view, c.op, part, root_index, a.fn);
      },
      [](int) {});
  hier::host_barrier(c, static_cast<uint16_t>(1 + chunks));
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
