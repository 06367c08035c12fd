// Linear reduce: every rank sends its vector to the root, which receives them all in one step
// and folds them in rank order (x0 op x1 op ... op xP-1). P-1 times the bytes into the root,
// but the result's rounding depends on nothing but the inputs: the deterministic choice.
#include <cstring>
#include <vector>

#include "collectives/algorithms.hpp"
#include "collectives/kept_scratch.hpp"

namespace spmd::algo {

void reduce_linear(Transport& t, const OpContext& op, TensorView data, int root, ReduceFn fn) {
  const int p = t.size(), r = t.rank();
  if (p == 1) return;
  if (r != root) {
    send_to(t, op, root, data.data, data.bytes());
    return;
  }
  const size_t bytes = data.bytes();
  thread_local std::vector<char> kept;
  KeptScratch scratch(kept, bytes * static_cast<size_t>(p));
  std::vector<RecvPart> ins;
  for (int i = 0; i < p; ++i)
    if (i != root) ins.push_back(RecvPart{i, scratch.data() + bytes * static_cast<size_t>(i), bytes});
  t.run({}, ins, op);
  if (data.count == 0) return;
  std::memcpy(scratch.data() + bytes * static_cast<size_t>(root), data.data, bytes);
  std::memcpy(data.data, scratch.data(), bytes);
  for (int i = 1; i < p; ++i) fn(data.data, data.data, scratch.data() + bytes * static_cast<size_t>(i), data.count);
}

}  // namespace spmd::algo
