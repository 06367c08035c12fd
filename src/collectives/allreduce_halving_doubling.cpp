// Halving-doubling (Rabenseifner) all_reduce: reduce-scatter by recursive halving, then
// all-gather by recursive doubling. 2*log2(P) steps moving 2(P-1)/P of the data like the ring,
// but with log2(P) instead of P-1 latencies per phase: the choice for medium sizes and for P
// larger than the core count, where every ring step waits for a descheduled rank. P not a power
// of two folds the first 2*(P-P') ranks in pairs first, as in recursive doubling.
#include "collectives/algorithms.hpp"

namespace spmd::algo {

void allreduce_halving_doubling(Transport& t, const OpContext& op, TensorView data, ReduceFn fn) {
  const int p = t.size(), r = t.rank();
  if (p == 1) return;
  const size_t es = dtype_size(data.dtype), bytes = data.bytes(), n = data.count;
  char* buf = static_cast<char*>(data.data);
  int pow2 = 1;
  while (pow2 * 2 <= p) pow2 *= 2;
  const int rem = p - pow2;

  int vrank = r - rem;
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      send_to(t, op, r + 1, buf, bytes);
      recv_from(t, op, r + 1, buf, bytes);
      return;
    }
    RecvPart in{r - 1, nullptr, bytes};
    in.align = es;
    in.sink = [buf, es, fn](size_t off, const void* chunk, size_t b) { fn(buf + off, buf + off, chunk, b / es); };
    t.run({}, {&in, 1}, op);
    vrank = r / 2;
  }
  auto real = [&](int v) { return v < rem ? v * 2 + 1 : v + rem; };
  auto offset = [&](int seg) { return segment_begin(n, pow2, seg) * es; };

  // Reduce-scatter: keep halving the range of segments we are responsible for.
  int lo = 0, hi = pow2;
  for (int mask = pow2 / 2; mask > 0; mask /= 2) {
    int peer = real(vrank ^ mask), mid = lo + (hi - lo) / 2;
    bool lower = (vrank & mask) == 0;
    int keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
    int give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
    SendPart out{peer, buf + offset(give_lo), offset(give_hi) - offset(give_lo)};
    char* keep = buf + offset(keep_lo);
    RecvPart in{peer, nullptr, offset(keep_hi) - offset(keep_lo)};
    in.align = es;
    in.sink = [keep, es, fn](size_t off, const void* chunk, size_t b) { fn(keep + off, keep + off, chunk, b / es); };
    t.run({&out, 1}, {&in, 1}, op);  // disjoint halves: reducing never touches what is sent
    lo = keep_lo;
    hi = keep_hi;
  }
  // All-gather: double the range back, exchanging with the same partners in reverse order.
  for (int mask = 1; mask < pow2; mask *= 2) {
    int peer = real(vrank ^ mask), width = hi - lo;
    bool lower = (vrank & mask) == 0;
    int their_lo = lower ? hi : lo - width, their_hi = their_lo + width;
    send_recv(t, op, peer, buf + offset(lo), offset(hi) - offset(lo), peer, buf + offset(their_lo),
              offset(their_hi) - offset(their_lo));
    lo = lower ? lo : their_lo;
    hi = lower ? their_hi : hi;
  }
  if (r < 2 * rem) send_to(t, op, r - 1, buf, bytes);
}

}  // namespace spmd::algo
