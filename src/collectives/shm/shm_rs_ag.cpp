// Reduce-scatter + all-gather through the slots (all_reduce, mid sizes, or when ranks cannot
// reach each other's memory). Per round every rank copies its part of the vector into its
// slot, all but its own sub-slice; after the arrival check each rank folds its own sub-slice
// of every slot (its own from its buffer) in rank order into its output and publishes it in
// its slot (step 1); then it copies the other sub-slices from their owners' slots. P ranks reduce on P cores, and every result element is computed
// once, so all ranks hold the same bits.
#include "collectives/shm/shm_algorithms.hpp"
#include "collectives/shm/shm_common.hpp"

namespace spmd::algo {

using namespace shm_detail;

void shm_rs_ag_all_reduce(AlgoContext& c, const CollArgs& a) {
  ShmGroup& g = *c.shm;
  const int p = g.size(), me = g.rank();
  const size_t es = dtype_size(a.data.dtype), n = a.data.count;
  char* data = static_cast<char*>(a.data.data);
  const size_t per_round = elements_per_round(g.slot_bytes(), es);
  size_t first = 0;
  do {
    const size_t m = std::min(per_round, n - first);
    const uint64_t e = g.begin_epoch(c.op);
    auto sub = [&](int q) { return segment_begin(m, p, q) * es; };
    const size_t lo = sub(me), len = sub(me + 1) - lo;
    // Peers read every sub-slice of our slot but ours, which we fold from our own buffer.
    copy_bytes(g.slot(me, e), data + first * es, lo);
    copy_bytes(g.slot(me, e) + lo + len, data + first * es + lo + len, m * es - lo - len);
    g.arrive_and_check(e, c.op, Record{});
    // Folded into our slot (a fold into our buffer would overwrite our input before rank
    // order reaches it), then copied out.
    fold_in_rank_order(a.fn, g.slot(me, e) + lo, p,
                       [&](int q) -> const char* { return q == me ? data + first * es + lo : g.slot(q, e) + lo; },
                       len / es, len);
    copy_bytes(data + first * es + lo, g.slot(me, e) + lo, len);
    g.post_step(e, 1);
    for (int k = 1; k < p; ++k) {
      const int q = (me + k) % p;  // start with different owners so readers spread out
      g.wait_step(q, e, 1, c.op);
      copy_bytes(data + first * es + sub(q), g.slot(q, e) + sub(q), sub(q + 1) - sub(q));
    }
    first += m;
  } while (first < n);
}

}  // namespace spmd::algo
