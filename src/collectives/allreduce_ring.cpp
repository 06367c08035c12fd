// Ring all_reduce: reduce-scatter then all-gather around the ring, 2(P-1) steps, each rank
// sending 2(P-1)/P of the data. Bandwidth-optimal; every received chunk is reduced straight
// from the transport's receive buffer into the output while the next chunk arrives.
#include "collectives/algorithms.hpp"

namespace spmd::algo {

void allreduce_ring(Transport& t, const OpContext& op, TensorView data, ReduceFn fn) {
  const int p = t.size(), r = t.rank();
  if (p == 1) return;
  const size_t es = dtype_size(data.dtype), n = data.count;
  char* base = static_cast<char*>(data.data);
  auto seg = [&](int i) {
    i = ((i % p) + p) % p;
    size_t b = segment_begin(n, p, i), e = segment_begin(n, p, i + 1);
    return std::pair<char*, size_t>{base + b * es, (e - b) * es};
  };
  const int right = (r + 1) % p, left = (r - 1 + p) % p;

  for (int s = 0; s < p - 1; ++s) {  // reduce-scatter: afterwards we own segment r+1
    auto [sp, sb] = seg(r - s);
    auto [rp, rb] = seg(r - s - 1);
    SendPart send{right, sp, sb};
    RecvPart recv{left, nullptr, rb};
    recv.align = es;
    recv.sink = [rp = rp, es, fn](size_t off, const void* chunk, size_t bytes) {
      fn(rp + off, rp + off, chunk, bytes / es);
    };
    t.run({&send, 1}, {&recv, 1}, op);
  }
  for (int s = 0; s < p - 1; ++s) {  // all-gather the reduced segments
    auto [sp, sb] = seg(r + 1 - s);
    auto [rp, rb] = seg(r - s);
    send_recv(t, op, right, sp, sb, left, rp, rb);
  }
}

}  // namespace spmd::algo
