// Binomial-tree broadcast: log2(P) rounds for small messages. Each rank receives from its
// parent and forwards to its children in the same step, chunk by chunk as bytes arrive, so a
// larger message is pipelined down the tree.
#include <vector>

#include "collectives/algorithms.hpp"

namespace spmd::algo {

void broadcast_binomial(Transport& t, const OpContext& op, TensorView data, int root) {
  const int p = t.size();
  if (p == 1) return;
  const int vr = (t.rank() - root + p) % p;
  auto real = [&](int v) { return (v + root) % p; };
  int mask = 1;
  RecvPart in;
  bool has_parent = false;
  while (mask < p) {
    if (vr & mask) {
      in = RecvPart{real(vr - mask), data.data, data.bytes()};
      has_parent = true;
      break;
    }
    mask <<= 1;
  }
  std::vector<SendPart> outs;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vr + mask < p) {
      SendPart s{real(vr + mask), data.data, data.bytes()};
      if (has_parent) s.ready = &in.received;
      outs.push_back(s);
    }
  t.run(outs, has_parent ? std::span<RecvPart>(&in, 1) : std::span<RecvPart>(), op);
}

}  // namespace spmd::algo
