// Pipelined chain broadcast: root -> root+1 -> ... -> root+P-1, every rank forwarding bytes as
// soon as they arrive. Each link carries the message once, so for large messages the time is
// about one transfer plus P-2 chunks of pipeline fill, independent of P.
#include "collectives/algorithms.hpp"

namespace spmd::algo {

void broadcast_chain(Transport& t, const OpContext& op, TensorView data, int root) {
  const int p = t.size();
  if (p == 1) return;
  const int vr = (t.rank() - root + p) % p;
  const int prev = (t.rank() - 1 + p) % p, next = (t.rank() + 1) % p;
  RecvPart in{prev, data.data, data.bytes()};
  SendPart out{next, data.data, data.bytes()};
  if (vr > 0) out.ready = &in.received;
  bool receives = vr > 0, sends = vr < p - 1;
  t.run(sends ? std::span<SendPart>(&out, 1) : std::span<SendPart>(),
        receives ? std::span<RecvPart>(&in, 1) : std::span<RecvPart>(), op);
}

}  // namespace spmd::algo
