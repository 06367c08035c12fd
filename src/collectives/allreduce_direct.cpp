// Direct all_reduce: two steps whatever P. Step 1 (reduce-scatter): every rank sends segment j
// of its vector to rank j and receives its own segment from every peer at once; step 2
// (all-gather): every rank sends its reduced segment to every peer at once. It moves the ring's
// bytes with 2 synchronisations instead of 2(P-1): the choice when ranks outnumber cores (each
// ring step waits for a descheduled rank) and when peers on one host read each other's memory
// directly (remote reads), where all P-1 reads of a step proceed in parallel.
// Segments from peers land in scratch and are combined in rank order after the step, so the
// result does not depend on arrival order.
#include <cstring>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/kept_scratch.hpp"

namespace spmd::algo {

void allreduce_direct(Transport& t, const OpContext& op, TensorView data, ReduceFn fn) {
  const int p = t.size(), r = t.rank();
  if (p == 1) return;
  const size_t es = dtype_size(data.dtype), n = data.count;
  char* base = static_cast<char*>(data.data);
  auto seg_begin = [&](int i) { return segment_begin(n, p, i) * es; };
  const size_t mine_off = seg_begin(r), mine_bytes = seg_begin(r + 1) - mine_off;

  thread_local std::vector<char> kept;
  KeptScratch scratch(kept, mine_bytes * static_cast<size_t>(p - 1));
  std::vector<SendPart> sends;
  std::vector<RecvPart> recvs;
  for (int k = 1; k < p; ++k) {  // peers in the order r+1, r+2, ...: spreads the load
    int j = (r + k) % p;
    sends.push_back(SendPart{j, base + seg_begin(j), seg_begin(j + 1) - seg_begin(j)});
    recvs.push_back(RecvPart{j, scratch.data() + mine_bytes * static_cast<size_t>(k - 1), mine_bytes});
  }
  t.run(sends, recvs, op);
  // Combine in global rank order (0, 1, ..., P-1) so every run rounds the same way.
  std::vector<const char*> parts(static_cast<size_t>(p));
  parts[static_cast<size_t>(r)] = base + mine_off;
  for (int k = 1; k < p; ++k) parts[static_cast<size_t>((r + k) % p)] = scratch.data() + mine_bytes * static_cast<size_t>(k - 1);
  const size_t count = mine_bytes / es;
  if (count) {
    if (r == 0) {
      for (int j = 1; j < p; ++j) fn(base + mine_off, base + mine_off, parts[static_cast<size_t>(j)], count);
    } else {
      // parts[0] op parts[1] ... written into our segment, which is parts[r] itself: start from
      // a copy of parts[0] in its scratch slot.
      char* acc = const_cast<char*>(parts[0]);
      for (int j = 1; j < p; ++j) fn(acc, acc, parts[static_cast<size_t>(j)], count);
      std::memcpy(base + mine_off, acc, mine_bytes);
    }
  }
  sends.clear();
  recvs.clear();
  for (int k = 1; k < p; ++k) {
    int j = (r + k) % p;
    sends.push_back(SendPart{j, base + mine_off, mine_bytes});
    recvs.push_back(RecvPart{j, base + seg_begin(j), seg_begin(j + 1) - seg_begin(j)});
  }
  t.run(sends, recvs, op);
}

}  // namespace spmd::algo
