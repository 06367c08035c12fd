// Ring all_gather: P-1 steps; at step s each rank passes on the block it received at step
// s-1. Blocks need not be contiguous (the list form gathers straight into the caller's views).
#include "collectives/algorithms.hpp"

namespace spmd::algo {

void allgather_ring(Transport& t, const OpContext& op, std::span<const TensorView> blocks) {
  const int p = t.size(), r = t.rank();
  auto block = [&](int i) -> const TensorView& { return blocks[static_cast<size_t>(((i % p) + p) % p)]; };
  for (int s = 0; s < p - 1; ++s) {
    const TensorView& out = block(r - s);
    const TensorView& in = block(r - s - 1);
    send_recv(t, op, (r + 1) % p, out.data, out.bytes(), (r - 1 + p) % p, in.data, in.bytes());
  }
}

}  // namespace spmd::algo
