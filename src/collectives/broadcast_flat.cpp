// Flat broadcast: the root sends to every rank in one step. Over a network that is P-1 times
// the root's bandwidth; on one host with remote reads the root only publishes its buffer and
// every rank copies it in parallel — one copy per rank and no forwarding delay.
#include <vector>

#include "collectives/algorithms.hpp"

namespace spmd::algo {

void broadcast_flat(Transport& t, const OpContext& op, TensorView data, int root) {
  const int p = t.size();
  if (t.rank() != root) {
    recv_from(t, op, root, data.data, data.bytes());
    return;
  }
  std::vector<SendPart> outs;
  for (int i = 0; i < p; ++i)
    if (i != root) outs.push_back(SendPart{i, data.data, data.bytes()});
  t.run(outs, {}, op);
}

}  // namespace spmd::algo
