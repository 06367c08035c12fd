// Linear gather: every rank sends its block to the root, which receives them all in one step
// (concurrently, so one slow sender does not serialise the others).
#include <cstring>
#include <vector>

#include "collectives/algorithms.hpp"

namespace spmd::algo {

void gather_linear(Transport& t, const OpContext& op, TensorView input, std::span<const TensorView> outputs, int root) {
  const int p = t.size(), r = t.rank();
  if (r != root) {
    send_to(t, op, root, input.data, input.bytes());
    return;
  }
  const TensorView& own = outputs[static_cast<size_t>(root)];
  if (own.bytes() && own.data != input.data) std::memcpy(own.data, input.data, own.bytes());
  std::vector<RecvPart> ins;
  for (int i = 0; i < p; ++i)
    if (i != root) ins.push_back(RecvPart{i, outputs[static_cast<size_t>(i)].data, outputs[static_cast<size_t>(i)].bytes()});
  t.run({}, ins, op);
}

}  // namespace spmd::algo
