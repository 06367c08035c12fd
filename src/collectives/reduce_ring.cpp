// Ring reduce (Rabenseifner's reduce): a reduce_scatter around the ring leaves each rank one
// block of the result, then every rank sends its block to the root at once. Each link carries
// (P-1)/P of the data in the ring and the root's link (P-1)/P of it again, 2(P-1)/P in all,
// where the binomial tree's root takes the whole vector once per level (log2 P levels: twice on
// 3 and 4 ranks). Non-root inputs stay untouched: a rank's block of the result is a scratch copy.
// Every rank receives in the ring, whose frames carry the call's fingerprint; the registry's
// row still runs the agreement round first, as every flat reduce does, so that the model
// prices them alike.
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/kept_scratch.hpp"

namespace spmd::algo {

void reduce_ring(Transport& t, const OpContext& op, TensorView data, int root, ReduceFn fn) {
  const int p = t.size();
  if (p == 1) return;
  std::vector<TensorView> blocks;  // block r: the elements rank r reduces, as all_reduce's ring cuts them
  for (int r = 0; r < p; ++r) {
    const size_t begin = segment_begin(data.count, p, r);
    blocks.push_back(data.slice(begin, segment_begin(data.count, p, r + 1) - begin));
  }
  const TensorView& own = blocks[static_cast<size_t>(t.rank())];
  thread_local std::vector<char> kept;
  KeptScratch reduced(kept, own.bytes());
  const TensorView mine(reduced.data(), own.count, data.dtype);
  reduce_scatter_ring(t, op, blocks, mine, fn);
  gather_linear(t, op, mine, blocks, root);  // the root's blocks land in its data
}

}  // namespace spmd::algo
