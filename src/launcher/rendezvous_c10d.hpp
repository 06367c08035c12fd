#pragma once

#include "launcher/rendezvous_store.hpp"

namespace spmd::launcher {

// The c10d-style rendezvous: nodes join at --rdzv-endpoint with the same --rdzv-id; the first
// node to join becomes node 0 and closes the round once MIN nodes are in and the last-call
// window has passed (or MAX are in). The node whose address is the endpoint and that binds
// its port first hosts the store.
class C10dRendezvous : public StoreRendezvous {
 public:
  C10dRendezvous(const Options& options, SignalChannel& signals);
  AttemptPlan next(int restart_count) override;

 private:
  std::string endpoint_text_;
};

}  // namespace spmd::launcher
