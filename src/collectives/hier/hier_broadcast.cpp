// Hierarchical broadcast: the root and one leader per other host exchange over TCP (after an
// agreement round, since the root only sends), then each of them broadcasts to its host
// through shared memory. Every rank returns only after its host's representative took part in
// the checked inter-host phase, so no rank returns from a call its peers disagree on. Binomial
// or chain among the representatives: the cost model's cheapest.
#include "collectives/cost_model.hpp"
#include "collectives/hier/hier_common.hpp"

namespace spmd::algo {

void hier_broadcast(AlgoContext& c, const CollArgs& a) {
  std::vector<int> reps = hier::representatives(c.loc, a.root);
  const int my_host = c.loc.host();
  const int rep = reps[static_cast<size_t>(my_host)];
  if (rep == c.loc.rank) {
    SubTransport view(c.net, reps);
    const int root_index = c.loc.host_of[static_cast<size_t>(a.root)];
    barrier_dissemination(view, c.op);
    if (cheapest_among_hosts(Collective::Broadcast, a.data.bytes(), view.size(), model_or_default(c.model)) == "chain")
      broadcast_chain(view, c.op, a.data, root_index);
    else
      broadcast_binomial(view, c.op, a.data, root_index);
  }
  hier::host_broadcast(c, 1, a.data, hier::local_index(c.loc, rep));
}

}  // namespace spmd::algo
