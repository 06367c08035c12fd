// Pairwise all_to_all: P-1 steps; at step s every rank sends to r+s and receives from r-s, so
// each step is a perfect matching and no rank is flooded: alltoall_direct's exchange with one
// peer a step. Works for uneven splits: each side knows the sizes from its own split vectors,
// and the frame header checks they agree.
#include "collectives/algorithms.hpp"

namespace spmd::algo {

void alltoall_pairwise(Transport& t, const OpContext& op, std::span<const TensorView> inputs,
                       std::span<const TensorView> outputs) {
  alltoall_in_steps(t, op, inputs, outputs, 1);
}

}  // namespace spmd::algo
