// The registry: every algorithm of every collective, one row each (a new algorithm is one file
// and one row). Rows adapt the transport-level algorithms (algorithms.hpp) to AlgoFn. Send-only
// ranks (a broadcast or scatter root, gather and reduce leaves) never see a peer's frame in the
// data phase, so those algorithms first run an agreement round (a dissemination barrier whose
// bare frames carry the call's fingerprint): no rank returns from a call its peers disagree on.
#include <string>

#include "collectives/algorithm.hpp"
#include "collectives/algorithms.hpp"
#include "collectives/shm/shm_algorithms.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {

namespace {

void agree(AlgoContext& c) { barrier_dissemination(c.net, c.op); }

constexpr uint32_t kShm = kNeedShm | kRankOrder;
constexpr uint32_t kCma = kNeedShm | kNeedCma | kRankOrder;

const Algorithm kAlgorithms[] = {
    // --- shared memory, one host (collectives/shm/) ---
    {Collective::AllReduce, "shm_flat", shm_flat_all_reduce, kShm, "everything through the slots, one sync per round"},
    {Collective::AllReduce, "shm_rs_ag", shm_rs_ag_all_reduce, kShm, "reduce-scatter + all-gather through the slots"},
    {Collective::AllReduce, "shm_cma", shm_cma_all_reduce, kCma, "single copy: each rank reduces its slice of every buffer"},
    {Collective::Broadcast, "shm_flat", shm_flat_broadcast, kShm, "through the root's slot"},
    {Collective::Broadcast, "shm_cma", shm_cma_broadcast, kCma, "single copy: receivers read, the root writes a share"},
    {Collective::Reduce, "shm_flat", shm_flat_reduce, kShm, "through the slots; the root folds"},
    {Collective::Reduce, "shm_cma", shm_cma_reduce, kCma, "single copy: each rank reduces a slice into the root"},
    {Collective::AllGather, "shm_flat", shm_flat_all_gather, kShm | kFillsOwnBlock,
     "through the slots; its own block copied while the peers stage theirs"},
    {Collective::AllGather, "shm_cma", shm_cma_all_gather, kCma | kFillsOwnBlock,
     "single copy: every rank writes its block into every output, its own included, chunk by chunk"},
    {Collective::Gather, "shm_flat", shm_flat_gather, kShm, "through the slots"},
    {Collective::Gather, "shm_cma", shm_cma_gather, kCma, "single copy: the root reads every block"},
    {Collective::Scatter, "shm_flat", shm_flat_scatter, kShm, "through the root's slot"},
    {Collective::Scatter, "shm_cma", shm_cma_scatter, kCma, "single copy: every rank reads its block"},
    {Collective::ReduceScatter, "shm_flat", shm_flat_reduce_scatter, kShm, "through the slots"},
    {Collective::ReduceScatter, "shm_cma", shm_cma_reduce_scatter, kCma, "single copy: each rank reads its block of every input"},
    {Collective::AllToAll, "shm_flat", shm_flat_all_to_all, kNeedShm, "through the slots (up to one slot per rank)"},
    {Collective::AllToAll, "shm_cma", shm_cma_all_to_all, kNeedShm | kNeedCma, "single copy: every rank reads its blocks"},
    {Collective::Barrier, "shm_flat", shm_flat_barrier, kNeedShm, "one arrival check"},
    // --- hierarchical, several hosts (collectives/hier/) ---
    {Collective::AllReduce, "hier", hier_all_reduce, kNeedHosts,
     "reduce to each host's leader, all-reduce among leaders, broadcast on each host"},
    {Collective::Broadcast, "hier", hier_broadcast, kNeedHosts, "among one rank per host, then on each host"},
    {Collective::Reduce, "hier", hier_reduce, kNeedHosts, "on each host, then among one rank per host"},
    {Collective::Barrier, "hier", hier_barrier, kNeedHosts, "on each host, among leaders, on each host"},
    {Collective::AllGather, "hier", hier_all_gather, kNeedHosts,
     "gather on each host, ring of whole hosts' blocks among leaders, broadcast on each host"},
    {Collective::ReduceScatter, "hier", hier_reduce_scatter, kNeedHosts,
     "reduce on each host, reduce-scatter by host among leaders, scatter on each host"},
    {Collective::Gather, "hier", hier_gather, kNeedHosts, "on each host, then whole hosts' blocks to the root"},
    {Collective::Scatter, "hier", hier_scatter, kNeedHosts, "whole hosts' blocks from the root, then on each host"},
    {Collective::AllToAll, "hier", hier_all_to_all, kNeedHosts | kEvenSplitsOnly,
     "inputs gathered at each host's leader, one message per pair of hosts, outputs scattered on each host"},
    // --- all_reduce ---
    {Collective::AllReduce, "ring", [](AlgoContext& c, const CollArgs& a) { allreduce_ring(c.net, c.op, a.data, a.fn); },
     kNeedNothing, "reduce-scatter + all-gather around a ring; bandwidth-optimal"},
    {Collective::AllReduce, "recursive_doubling",
     [](AlgoContext& c, const CollArgs& a) { allreduce_recursive_doubling(c.net, c.op, a.data, a.fn); }, kNeedNothing,
     "log2 P exchanges of the whole vector; latency-optimal"},
    {Collective::AllReduce, "halving_doubling",
     [](AlgoContext& c, const CollArgs& a) { allreduce_halving_doubling(c.net, c.op, a.data, a.fn); }, kNeedNothing,
     "Rabenseifner: the ring's bytes with log2 P latencies per phase"},
    {Collective::AllReduce, "direct", [](AlgoContext& c, const CollArgs& a) { allreduce_direct(c.net, c.op, a.data, a.fn); },
     kRankOrder, "two steps, every peer at once; segments combined in rank order"},
    // --- broadcast ---
    {Collective::Broadcast, "binomial",
     [](AlgoContext& c, const CollArgs& a) { agree(c); broadcast_binomial(c.net, c.op, a.data, a.root); }, kNeedNothing,
     "binomial tree, pipelined chunk by chunk"},
    {Collective::Broadcast, "chain",
     [](AlgoContext& c, const CollArgs& a) { agree(c); broadcast_chain(c.net, c.op, a.data, a.root); }, kNeedNothing,
     "pipelined chain; each link carries the message once"},
    {Collective::Broadcast, "flat",
     [](AlgoContext& c, const CollArgs& a) { agree(c); broadcast_flat(c.net, c.op, a.data, a.root); }, kNeedNothing,
     "the root sends to every rank in one step"},
    // --- reduce ---
    {Collective::Reduce, "binomial",
     [](AlgoContext& c, const CollArgs& a) { agree(c); reduce_binomial(c.net, c.op, a.data, a.root, a.fn); }, kNeedNothing,
     "binomial tree of partial results"},
    {Collective::Reduce, "linear",
     [](AlgoContext& c, const CollArgs& a) { agree(c); reduce_linear(c.net, c.op, a.data, a.root, a.fn); }, kRankOrder,
     "every rank sends to the root, which folds in rank order"},
    {Collective::Reduce, "ring",
     [](AlgoContext& c, const CollArgs& a) { agree(c); reduce_ring(c.net, c.op, a.data, a.root, a.fn); }, kNeedNothing,
     "reduce-scatter around a ring, the blocks gathered at the root; bandwidth-optimal"},
    // --- all_gather, gather, scatter ---
    {Collective::AllGather, "ring", [](AlgoContext& c, const CollArgs& a) { allgather_ring(c.net, c.op, a.blocks); },
     kNeedNothing, "P-1 steps around a ring"},
    {Collective::AllGather, "bruck", [](AlgoContext& c, const CollArgs& a) { allgather_bruck(c.net, c.op, a.blocks); },
     kNeedNothing, "ceil(log2 P) steps, the blocks held doubling"},
    {Collective::Gather, "linear",
     [](AlgoContext& c, const CollArgs& a) { agree(c); gather_linear(c.net, c.op, a.data, a.blocks, a.root); },
     kNeedNothing, "every rank sends to the root at once"},
    {Collective::Scatter, "linear",
     [](AlgoContext& c, const CollArgs& a) { agree(c); scatter_linear(c.net, c.op, a.blocks, a.data, a.root); },
     kNeedNothing, "the root sends every block at once"},
    // --- reduce_scatter, all_to_all, barrier ---
    {Collective::ReduceScatter, "ring",
     [](AlgoContext& c, const CollArgs& a) { reduce_scatter_ring(c.net, c.op, a.blocks, a.data, a.fn); }, kNeedNothing,
     "P-1 steps around a ring"},
    {Collective::ReduceScatter, "direct",
     [](AlgoContext& c, const CollArgs& a) { reduce_scatter_direct(c.net, c.op, a.blocks, a.data, a.fn); }, kRankOrder,
     "one step, every peer at once; blocks folded in rank order"},
    {Collective::AllToAll, "pairwise",
     [](AlgoContext& c, const CollArgs& a) { alltoall_pairwise(c.net, c.op, a.blocks, a.blocks2); }, kNeedNothing,
     "P-1 perfect matchings"},
    {Collective::AllToAll, "direct",
     [](AlgoContext& c, const CollArgs& a) { alltoall_direct(c.net, c.op, a.blocks, a.blocks2); }, kNeedNothing,
     "one step, every peer at once"},
    {Collective::Barrier, "dissemination", [](AlgoContext& c, const CollArgs&) { barrier_dissemination(c.net, c.op); },
     kNeedNothing, "ceil(log2 P) rounds"},
};

}  // namespace

std::span<const Algorithm> all_algorithms() { return kAlgorithms; }

uint16_t algorithm_id(const Algorithm& a) { return static_cast<uint16_t>(&a - kAlgorithms + 1); }

const Algorithm& algorithm_by_id(uint16_t id) {
  if (id == 0 || id > std::size(kAlgorithms)) raise(ErrorKind::InvalidArgument, "internal: no algorithm #" + std::to_string(id));
  return kAlgorithms[id - 1];
}

GroupTraits GroupTraits::of(const Locality& loc, bool shm, bool cma, bool deterministic) {
  GroupTraits g;
  g.host_shm = shm;
  g.size = loc.size();
  g.hosts = loc.host_count();
  g.max_ranks_per_host = loc.max_ranks_per_host();
  g.shm = shm && loc.one_host() && loc.size() > 1;
  g.cma = g.shm && cma;
  g.deterministic = deterministic;
  return g;
}

std::string why_not(const Algorithm& a, const GroupTraits& g) {
  if ((a.needs & kNeedShm) && !g.shm)
    return g.hosts > 1 ? "it needs every member on one host; this group spans " + std::to_string(g.hosts) + " hosts"
                       : "it needs a shared-memory segment, and this group has none (SPMD_SHM=0?)";
  if ((a.needs & kNeedCma) && !g.cma)
    return "it reads peers' memory directly (process_vm_readv), which this group cannot (SPMD_CMA=0, or ptrace "
           "restrictions between the ranks)";
  if ((a.needs & kNeedHosts) && g.hosts < 2) return "it is hierarchical, and this group lives on one host";
  if ((a.needs & kNeedHosts) && !g.host_shm) return "it is hierarchical, and shared memory is off (SPMD_SHM=0)";
  bool reduces = a.collective == Collective::AllReduce || a.collective == Collective::Reduce ||
                 a.collective == Collective::ReduceScatter;
  if (g.deterministic && reduces && !(a.needs & kRankOrder))
    return "deterministic mode (SPMD_DETERMINISTIC=1) needs an algorithm that reduces in rank order";
  return "";
}

bool applicable(const Algorithm& a, const GroupTraits& g) {
  if ((a.needs & kNeedShm) && !g.shm) return false;
  if ((a.needs & kNeedCma) && !g.cma) return false;
  if ((a.needs & kNeedHosts) && (g.hosts < 2 || !g.host_shm)) return false;
  bool reduces = a.collective == Collective::AllReduce || a.collective == Collective::Reduce ||
                 a.collective == Collective::ReduceScatter;
  return !(g.deterministic && reduces && !(a.needs & kRankOrder));
}

}  // namespace spmd::algo

namespace spmd::algo {
namespace {

const char* name_of(uint16_t algo) {
  if (algo == 0 || algo > std::size(kAlgorithms)) return "";
  return kAlgorithms[algo - 1].name;
}

// call/call.hpp names algorithms through this table (it lies below the algorithms' layer).
const bool kNamesHandedDown = (set_algorithm_names(&name_of), true);

}  // namespace
}  // namespace spmd::algo
