// The static rendezvous: --nnodes N nodes with fixed --node-rank; node 0's spmdrun hosts the
// launcher store at --master-addr:--master-port. Nodes may run different --nproc-per-node:
// each publishes its count, and global ranks follow from the counts of lower nodes.
#pragma once

#include "launcher/rendezvous/store.hpp"

namespace spmd::launcher {

class StaticRendezvous : public StoreRendezvous {
 public:
  StaticRendezvous(const Options& options, SignalChannel& signals);
  AttemptPlan next(int restart_count) override;
};

}  // namespace spmd::launcher
