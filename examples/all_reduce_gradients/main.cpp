// all_reduce_gradients: the heart of data-parallel training.
//
// Each rank trains on its own slice of the data and so computes its own gradient. Before the
// optimizer step, every rank replaces its gradient by the average over all ranks, so that all
// replicas of the model take the same step. That average is one all_reduce with ReduceOp::Avg.
//
//   spmdrun --nproc-per-node 4 build/bin/all_reduce_gradients
#include <cmath>
#include <cstdio>
#include <vector>

#include <spmd/spmd.hpp>

#include "../common/start.hpp"

int main() {
  spmd::ProcessGroup& world = examples::init_or_exit("all_reduce_gradients");
  const int rank = world.rank(), size = world.size();

  // A stand-in for the gradient this rank's mini-batch produced: rank r holds (r + 1) * (i + 1).
  std::vector<float> grad(8);
  for (size_t i = 0; i < grad.size(); ++i) grad[i] = static_cast<float>((rank + 1) * (i + 1));

  // In place: afterwards every rank holds the element-wise mean over the ranks.
  world.all_reduce(grad, spmd::ReduceOp::Avg);
  // (all_reduce_async returns a spmd::Work to wait() on later: DDP uses it to overlap the
  // communication of one bucket of gradients with the computation of the next.)

  // The mean of (r + 1) over r = 0..size-1 is (size + 1) / 2.
  int wrong = 0;
  for (size_t i = 0; i < grad.size(); ++i) {
    float expected = static_cast<float>(i + 1) * static_cast<float>(size + 1) / 2.0f;
    if (std::fabs(grad[i] - expected) > 1e-5f * expected) ++wrong;
  }
  std::printf("rank %d: averaged gradient [%g %g %g ... %g] %s\n", rank, grad[0], grad[1], grad[2], grad.back(),
              wrong == 0 ? "OK" : "WRONG");
  std::fflush(stdout);
  spmd::destroy();
  return wrong == 0 ? 0 : 1;
}
