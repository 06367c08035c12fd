// The shared-memory algorithms (one host; local index == group rank), registered in
// collectives/registry.cpp. shm_flat: everything through the slots, one synchronisation per
// round (small messages). shm_rs_ag: all_reduce as reduce-scatter + all-gather through the
// slots, each rank reducing its own slice (mid sizes). shm_cma: single copy, every rank
// reading (and, for reductions, writing) its peers' buffers directly (large messages).
#pragma once

#include "collectives/algorithm.hpp"

namespace spmd::algo {

void shm_flat_all_reduce(AlgoContext& c, const CollArgs& a);
void shm_flat_reduce(AlgoContext& c, const CollArgs& a);
void shm_flat_broadcast(AlgoContext& c, const CollArgs& a);
void shm_flat_all_gather(AlgoContext& c, const CollArgs& a);
void shm_flat_gather(AlgoContext& c, const CollArgs& a);
void shm_flat_scatter(AlgoContext& c, const CollArgs& a);
void shm_flat_reduce_scatter(AlgoContext& c, const CollArgs& a);
void shm_flat_all_to_all(AlgoContext& c, const CollArgs& a);
void shm_flat_barrier(AlgoContext& c, const CollArgs& a);

void shm_rs_ag_all_reduce(AlgoContext& c, const CollArgs& a);

void shm_cma_all_reduce(AlgoContext& c, const CollArgs& a);
void shm_cma_reduce(AlgoContext& c, const CollArgs& a);
void shm_cma_broadcast(AlgoContext& c, const CollArgs& a);
void shm_cma_all_gather(AlgoContext& c, const CollArgs& a);
void shm_cma_gather(AlgoContext& c, const CollArgs& a);
void shm_cma_scatter(AlgoContext& c, const CollArgs& a);
void shm_cma_reduce_scatter(AlgoContext& c, const CollArgs& a);
void shm_cma_all_to_all(AlgoContext& c, const CollArgs& a);

// Hierarchical (collectives/hier/): shared memory within each host, TCP between hosts.
void hier_all_reduce(AlgoContext& c, const CollArgs& a);
void hier_broadcast(AlgoContext& c, const CollArgs& a);
void hier_reduce(AlgoContext& c, const CollArgs& a);
void hier_barrier(AlgoContext& c, const CollArgs& a);
void hier_all_gather(AlgoContext& c, const CollArgs& a);
void hier_reduce_scatter(AlgoContext& c, const CollArgs& a);
void hier_gather(AlgoContext& c, const CollArgs& a);
void hier_scatter(AlgoContext& c, const CollArgs& a);
void hier_all_to_all(AlgoContext& c, const CollArgs& a);

}  // namespace spmd::algo
