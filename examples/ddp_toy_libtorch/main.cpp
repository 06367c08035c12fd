// The ToyModel of PyTorch's DDP tutorial (Linear 10→10, ReLU, Linear 10→5; MSE; SGD lr
// 0.001), in LibTorch, data-parallel through spmd:
//   spmdrun --nproc-per-node 2 build/bin/ddp_toy_libtorch [--steps N]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "spmd/spmd.hpp"
#include "spmd/torch.hpp"

#include "../common/start.hpp"

int main(int argc, char** argv) {
  int steps = 20;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--steps") steps = std::atoi(argv[++i]);
  try {
    torch::set_num_threads(1);
    spmd::ProcessGroup& world = examples::init_or_exit("ddp_toy_libtorch");
    torch::manual_seed(world.rank());  // replicas start different; DDP broadcasts rank 0's
    auto model = torch::nn::Sequential(torch::nn::Linear(10, 10), torch::nn::ReLU(), torch::nn::Linear(10, 5));
    spmd::torch::DistributedDataParallel ddp(model.ptr(), world);
    torch::optim::SGD optimizer(model->parameters(), torch::optim::SGDOptions(0.001));
    torch::manual_seed(1000 + world.rank());  // each rank its own data
    for (int step = 0; step < steps; ++step) {
      optimizer.zero_grad();
      auto outputs = model->forward(torch::randn({20, 10}));
      auto loss = torch::mse_loss(outputs, torch::randn({20, 5}));
      loss.backward();  // gradients are averaged across ranks when this returns
      optimizer.step();
      std::vector<float> l{loss.item<float>()};
      world.all_reduce(l, spmd::ReduceOp::Avg);
      if (world.rank() == 0 && (step % 5 == 0 || step + 1 == steps))
        std::printf("step %3d  mean loss over %d ranks %.4f\n", step, world.size(), l[0]);
    }
    // Replicas must be identical: compare a checksum of the parameters across ranks.
    double sum = 0;
    for (auto& p : model->parameters()) sum += p.sum().item<double>();
    std::vector<double> lo{sum}, hi{sum};
    world.all_reduce(lo, spmd::ReduceOp::Min);
    world.all_reduce(hi, spmd::ReduceOp::Max);
    if (world.rank() == 0) std::printf("replicas identical: %s\n", lo[0] == hi[0] ? "yes" : "NO");
    spmd::destroy();
    return lo[0] == hi[0] ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddp_toy_libtorch: %s\n", e.what());
    return 1;
  }
}
