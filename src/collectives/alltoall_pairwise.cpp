// Pairwise all_to_all: P-1 steps; at step s every rank sends to r+s and receives from r-s, so
// each step is a perfect matching and no rank is flooded. Works for uneven splits: each side
// knows the sizes from its own split vectors, and the frame header checks they agree.
#include <cstring>

#include "collectives/algorithms.hpp"

namespace spmd::algo {

void alltoall_pairwise(Transport& t, const OpContext& op, std::span<const TensorView> inputs,
                       std::span<const TensorView> outputs) {
  const int p = t.size(), r = t.rank();
  const auto ur = static_cast<size_t>(r);
  if (outputs[ur].bytes()) std::memcpy(outputs[ur].data, inputs[ur].data, outputs[ur].bytes());
  for (int s = 1; s < p; ++s) {
    const auto to = static_cast<size_t>((r + s) % p), from = static_cast<size_t>((r - s + p) % p);
    send_recv(t, op, static_cast<int>(to), inputs[to].data, inputs[to].bytes(), static_cast<int>(from),
              outputs[from].data, outputs[from].bytes());
  }
}

}  // namespace spmd::algo
