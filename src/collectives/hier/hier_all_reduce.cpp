// Hierarchical all_reduce for groups spanning hosts: each host reduces to its leader through
// shared memory, the leaders all-reduce over TCP (the cost model's cheapest algorithm for the
// size and the number of hosts), and each leader broadcasts the result to its host through
// shared memory. Inter-host traffic is one vector per host instead of one per rank.
//
// Pipelined in chunks (from 256 KiB, as many as the cost model prices best): the leader's
// inter-host phase runs on a thread of its own, chunk after chunk as the host finishes reducing
// it, while the host reduces the next chunk and broadcasts the previous one, so the network does
// not wait for the local phases (3 x 2 ranks over 1 Gbit/s, 16 MiB: they cost ~15 ms of ~200
// unpipelined). Every rank of a host runs the local phases in the same order: reduce 0,
// reduce 1, broadcast 0, reduce 2, broadcast 1, ..., broadcast K-1.
#include "collectives/cost_model.hpp"
#include "collectives/hier/hier_common.hpp"
#include "collectives/hier/hier_pipeline.hpp"

namespace spmd::algo {

namespace {

void leaders_all_reduce(AlgoContext& c, const OpContext& op, TensorView data, ReduceFn fn) {
  SubTransport leaders(c.net, c.loc.leaders());
  std::string_view among =
      cheapest_among_hosts(Collective::AllReduce, data.bytes(), leaders.size(), model_or_default(c.model));
  if (among == "recursive_doubling")
    allreduce_recursive_doubling(leaders, op, data, fn);
  else if (among == "halving_doubling")
    allreduce_halving_doubling(leaders, op, data, fn);
  else
    allreduce_ring(leaders, op, data, fn);
}

}  // namespace

void hier_all_reduce(AlgoContext& c, const CollArgs& a) {
  const int chunks = hier::chunks_of(c, Collective::AllReduce, a.data.bytes(), a.data.count);
  auto phase = [](int k, int which) { return static_cast<uint16_t>(1 + 2 * k + which); };
  hier::pipeline(
      c.loc.is_leader(), chunks,
      [&](int k) { hier::host_reduce(c, phase(k, 0), hier::chunk_of(a.data, chunks, k), 0, a.fn); },
      [&](int k) { leaders_all_reduce(c, c.op, hier::chunk_of(a.data, chunks, k), a.fn); },
      [&](int k) { hier::host_broadcast(c, phase(k, 1), hier::chunk_of(a.data, chunks, k), 0); });
}

}  // namespace spmd::algo
