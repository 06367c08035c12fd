// Linear scatter: the root sends every rank its block in one step (concurrently).
#include <cstring>
#include <vector>

#include "collectives/algorithms.hpp"

namespace spmd::algo {

void scatter_linear(Transport& t, const OpContext& op, std::span<const TensorView> inputs, TensorView output, int root) {
  const int p = t.size(), r = t.rank();
  if (r != root) {
    recv_from(t, op, root, output.data, output.bytes());
    return;
  }
  const TensorView& own = inputs[static_cast<size_t>(root)];
  if (own.bytes() && own.data != output.data) std::memcpy(output.data, own.data, own.bytes());
  std::vector<SendPart> outs;
  for (int i = 0; i < p; ++i)
    if (i != root) outs.push_back(SendPart{i, inputs[static_cast<size_t>(i)].data, inputs[static_cast<size_t>(i)].bytes()});
  t.run(outs, {}, op);
}

}  // namespace spmd::algo
