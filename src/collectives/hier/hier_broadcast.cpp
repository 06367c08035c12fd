// Hierarchical broadcast: the root and one leader per other host exchange over TCP (after an
// agreement round, since the root only sends), then each of them broadcasts to its host
// through shared memory. Every rank returns only after its host's representative took part in
// the checked inter-host phase, so no rank returns from a call its peers disagree on. Binomial
// or chain among the representatives: the cost model's cheapest.
//
// Pipelined in chunks as hier all_reduce is (hier_pipeline.hpp; the cost model's count): the
// representatives broadcast chunk k on a thread of their own while their hosts broadcast
// chunk k - 1, so the network does not wait for the local phase.
#include "collectives/cost_model.hpp"
#include "collectives/hier/hier_common.hpp"
#include "collectives/hier/hier_pipeline.hpp"

namespace spmd::algo {

void hier_broadcast(AlgoContext& c, const CollArgs& a) {
  const std::vector<int> reps = hier::representatives(c.loc, a.root);
  const int rep = reps[static_cast<size_t>(c.loc.host())];
  const int root_index = c.loc.host_of[static_cast<size_t>(a.root)];
  const NetModel& model = model_or_default(c.model);
  const TensorView data(a.data.data, a.data.bytes(), DType::U8);  // chunks in bytes
  const int chunks = hier::chunks_of(c, Collective::Broadcast, data.bytes(), data.count);
  auto chunk = [&](int k) { return hier::chunk_of(data, chunks, k); };
  auto among_hosts = [&](int k) {
    SubTransport view(c.net, reps);
    if (k == 0) barrier_dissemination(view, c.op);
    const TensorView part = chunk(k);
    if (cheapest_among_hosts(Collective::Broadcast, part.bytes(), view.size(), model) == "chain")
      broadcast_chain(view, c.op, part, root_index);
    else
      broadcast_binomial(view, c.op, part, root_index);
  };
  hier::pipeline(
      rep == c.loc.rank, chunks, [](int) {}, among_hosts,
      [&](int k) { hier::host_broadcast(c, static_cast<uint16_t>(1 + k), chunk(k), hier::local_index(c.loc, rep)); });
}

}  // namespace spmd::algo
