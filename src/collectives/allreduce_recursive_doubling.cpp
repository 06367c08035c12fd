// Recursive-doubling all_reduce: log2(P) steps, each exchanging the whole vector with the
// partner at distance 2^k. Latency-optimal for small vectors (one exchange at P=2). With P not
// a power of two, the first 2*(P-P') ranks pair up first (even ranks hand their data to the odd
// ones and receive the result at the end), as in MPICH.
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/kept_scratch.hpp"

namespace spmd::algo {

void allreduce_recursive_doubling(Transport& t, const OpContext& op, TensorView data, ReduceFn fn) {
  const int p = t.size(), r = t.rank();
  if (p == 1) return;
  const size_t es = dtype_size(data.dtype), bytes = data.bytes();
  char* buf = static_cast<char*>(data.data);
  auto reduce_into = [buf, es, fn](size_t off, const void* chunk, size_t n) {
    fn(buf + off, buf + off, chunk, n / es);
  };
  int pow2 = 1;
  while (pow2 * 2 <= p) pow2 *= 2;
  const int rem = p - pow2;

  int vrank;  // rank among the pow2 participants, -1 when folded away
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      send_to(t, op, r + 1, buf, bytes);
      vrank = -1;
    } else {
      RecvPart in{r - 1, nullptr, bytes};
      in.sink = reduce_into;
      in.align = es;
      t.run({}, {&in, 1}, op);
      vrank = r / 2;
    }
  } else {
    vrank = r - rem;
  }
  if (vrank >= 0) {
    thread_local std::vector<char> kept;
    KeptScratch theirs(kept, bytes);
    for (int mask = 1; mask < pow2; mask <<= 1) {
      int vpeer = vrank ^ mask;
      int peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
      SendPart out{peer, buf, bytes};
      RecvPart in{peer, nullptr, bytes};
      // Our vector is still being sent while theirs arrives, so theirs lands in a copy and
      // is combined once the step is over (small vectors: the copy costs nothing).
      in.data = theirs.data();
      t.run({&out, 1}, {&in, 1}, op);
      fn(buf, buf, theirs.data(), data.count);
    }
  }
  if (r < 2 * rem) {
    if (r % 2 == 0)
      recv_from(t, op, r + 1, buf, bytes);
    else
      send_to(t, op, r - 1, buf, bytes);
  }
}

}  // namespace spmd::algo
