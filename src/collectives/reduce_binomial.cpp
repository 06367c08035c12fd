// Binomial-tree reduce: each rank combines its children's partial results (in a fixed order,
// so results are reproducible) and passes the sum to its parent; log2(P) rounds. Non-root
// inputs stay untouched: partial sums live in a scratch copy.
#include <cstring>
#include <optional>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/kept_scratch.hpp"

namespace spmd::algo {

void reduce_binomial(Transport& t, const OpContext& op, TensorView data, int root, ReduceFn fn) {
  const int p = t.size();
  if (p == 1) return;
  const int vr = (t.rank() - root + p) % p;
  auto real = [&](int v) { return (v + root) % p; };
  const size_t es = dtype_size(data.dtype), bytes = data.bytes();
  thread_local std::vector<char> kept;
  std::optional<KeptScratch> scratch;
  char* acc = static_cast<char*>(data.data);
  bool copied = vr == 0;  // the root accumulates in place
  for (int mask = 1; mask < p; mask <<= 1) {
    if (vr & mask) {  // hand our partial result to the parent and stop
      send_to(t, op, real(vr - mask), acc, bytes);
      return;
    }
    if (vr + mask >= p) continue;
    if (!copied) {
      scratch.emplace(kept, bytes);
      if (bytes != 0) std::memcpy(scratch->data(), acc, bytes);  // an empty one may be null
      acc = scratch->data();
      copied = true;
    }
    RecvPart in{real(vr + mask), nullptr, bytes};
    in.align = es;
    in.sink = [acc, es, fn](size_t off, const void* chunk, size_t n) { fn(acc + off, acc + off, chunk, n / es); };
    t.run({}, {&in, 1}, op);
  }
}

}  // namespace spmd::algo
