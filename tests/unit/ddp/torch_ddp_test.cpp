// LibTorch DistributedDataParallel: W ranks (threads) each on a shard equal one model on the
// whole batch, with any optimizer, and replicas stay identical.
#include <gtest/gtest.h>

#include <mutex>

#include "spmd/torch.hpp"
#include "thread_ranks.hpp"

// Outside namespace spmd on purpose: here torch:: is LibTorch, spmd::torch the adapter.
namespace {

torch::nn::Sequential toy_model(int seed) {
  // LibTorch's default generator is process-wide: rank threads must not seed and draw at once.
  static std::mutex generator;
  std::lock_guard lk(generator);
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Linear(10, 10), torch::nn::ReLU(), torch::nn::Linear(10, 5));
}

constexpr int kSteps = 5;
constexpr int64_t kBatch = 12;

std::vector<at::Tensor> snapshot(torch::nn::Sequential& m) {
  std::vector<at::Tensor> out;
  for (auto& p : m->parameters()) out.push_back(p.detach().clone());
  return out;
}

at::Tensor inputs(int step) { return torch::sin(torch::arange(kBatch * 10, torch::kFloat).reshape({kBatch, 10}) * (0.1 + step)); }
at::Tensor targets(int step) { return torch::cos(torch::arange(kBatch * 5, torch::kFloat).reshape({kBatch, 5}) * (0.3 + step)); }

template <typename MakeOpt>
std::vector<at::Tensor> reference(MakeOpt make_opt) {
  auto m = toy_model(0);
  auto opt = make_opt(m->parameters());
  for (int s = 0; s < kSteps; ++s) {
    opt->zero_grad();
    torch::mse_loss(m->forward(inputs(s)), targets(s)).backward();
    opt->step();
  }
  return snapshot(m);
}

template <typename MakeOpt>
void check_equivalence(int world, MakeOpt make_opt) {
  torch::set_num_threads(1);
  const auto want = reference(make_opt);
  std::mutex mu;
  std::vector<std::vector<at::Tensor>> got(static_cast<size_t>(world));
  spmd::testing::run_ranks(world, [&](spmd::ProcessGroup& g, int rank) {
    auto m = toy_model(rank);  // different initial weights: DDP broadcasts rank 0's
    spmd::ReducerOptions ro;
    ro.first_bucket_cap_bytes = ro.bucket_cap_bytes = 256;  // several buckets
    spmd::torch::DistributedDataParallel ddp(m.ptr(), g, ro);
    auto opt = make_opt(m->parameters());
    const int64_t shard = kBatch / world;
    for (int s = 0; s < kSteps; ++s) {
      opt->zero_grad();
      auto x = inputs(s).narrow(0, rank * shard, shard);
      auto y = targets(s).narrow(0, rank * shard, shard);
      torch::mse_loss(m->forward(x), y).backward();  // the mean over the shard; DDP averages
      opt->step();
    }
    EXPECT_EQ(ddp.reducer().iteration(), static_cast<uint64_t>(kSteps));
    EXPECT_EQ(ddp.reducer().rebuild_count(), 1);
    std::lock_guard lk(mu);
    got[static_cast<size_t>(rank)] = snapshot(m);
  });
  for (int r = 0; r < world; ++r)
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_TRUE(torch::equal(got[static_cast<size_t>(r)][i], got[0][i])) << "rank " << r << " parameter " << i;
      EXPECT_TRUE(torch::allclose(got[static_cast<size_t>(r)][i], want[i], 1e-5, 1e-6))
          << "rank " << r << " parameter " << i << "\n" << got[static_cast<size_t>(r)][i] << "\n" << want[i];
    }
}

class TorchDdp : public ::testing::TestWithParam<int> {};

TEST_P(TorchDdp, SgdMatchesOneProcess) {
  check_equivalence(GetParam(), [](std::vector<at::Tensor> ps) {
    return std::make_unique<torch::optim::SGD>(ps, torch::optim::SGDOptions(0.001));
  });
}

TEST_P(TorchDdp, AdamMatchesOneProcess) {
  check_equivalence(GetParam(), [](std::vector<at::Tensor> ps) {
    return std::make_unique<torch::optim::Adam>(ps, torch::optim::AdamOptions(0.01));
  });
}

INSTANTIATE_TEST_SUITE_P(World, TorchDdp, ::testing::Values(1, 2, 3, 4));

TEST(TorchDdp, NoSyncAccumulatesLocally) {
  torch::set_num_threads(1);
  spmd::testing::run_ranks(2, [](spmd::ProcessGroup& g, int rank) {
    auto m = toy_model(0);
    spmd::torch::DistributedDataParallel ddp(m.ptr(), g);
    auto x = inputs(rank), y = targets(rank);
    {
      auto guard = ddp.no_sync();
      torch::mse_loss(m->forward(x), y).backward();
    }
    auto local = m->parameters()[0].grad().clone();
    // Local gradients differ between ranks while unsynchronised; the synced step averages.
    torch::mse_loss(m->forward(x), y).backward();
    auto sum_avg = m->parameters()[0].grad().clone();
    std::vector<float> mine(local.data_ptr<float>(), local.data_ptr<float>() + local.numel());
    g.all_reduce(mine, spmd::ReduceOp::Avg);  // avg over ranks of one backward's gradient
    auto expect = torch::from_blob(mine.data(), local.sizes()).clone() * 2;
    EXPECT_TRUE(torch::allclose(sum_avg, expect, 1e-5, 1e-6));
  });
}

struct TwoHeads : torch::nn::Module {
  TwoHeads() {
    a = register_module("a", torch::nn::Linear(4, 2));
    b = register_module("b", torch::nn::Linear(4, 2));
  }
  at::Tensor forward(const at::Tensor& x, bool use_b) { return use_b ? a(x) + b(x) : a(x); }
  torch::nn::Linear a{nullptr}, b{nullptr};
};

// Replicas agree on a tensor: its element-wise min and max over ranks are equal.
bool same_on_all_ranks(spmd::ProcessGroup& g, const at::Tensor& t) {
  auto lo = t.detach().clone().contiguous(), hi = lo.clone();
  g.all_reduce(spmd::torch::view(lo), spmd::ReduceOp::Min);
  g.all_reduce(spmd::torch::view(hi), spmd::ReduceOp::Max);
  return torch::equal(lo, hi);
}

TEST(TorchDdp, UnusedParameterRaisesFromBackwardNamingIt) {
  torch::set_num_threads(1);
  spmd::testing::run_ranks(2, [](spmd::ProcessGroup& g, int rank) {
    auto m = std::make_shared<TwoHeads>();
    spmd::torch::DistributedDataParallel ddp(m, g);
    auto x = torch::ones({3, 4});
    try {
      m->forward(x, /*use_b=*/false).sum().backward();
      ADD_FAILURE() << "backward accepted parameters without gradients";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("b.weight"), std::string::npos) << e.what();
    }
    // The Reducer reset itself: a step that uses everything works.
    m->zero_grad();
    m->forward(x * (rank + 1), /*use_b=*/true).sum().backward();
    EXPECT_TRUE(same_on_all_ranks(g, m->a->weight.grad()));
  });
}

TEST(TorchDdp, FindUnusedParametersLetsRanksSkipParameters) {
  torch::set_num_threads(1);
  spmd::testing::run_ranks(2, [](spmd::ProcessGroup& g, int rank) {
    auto m = std::make_shared<TwoHeads>();
    spmd::ReducerOptions ro;
    ro.find_unused_parameters = true;
    spmd::torch::DistributedDataParallel ddp(m, g, ro);
    m->forward(torch::ones({3, 4}), /*use_b=*/rank == 0).sum().backward();
    // b's gradient is rank 0's (3 rows of ones) averaged with rank 1's zeros.
    EXPECT_TRUE(torch::allclose(m->b->weight.grad(), torch::full({2, 4}, 1.5f)));
    EXPECT_TRUE(same_on_all_ranks(g, m->b->weight.grad()));
    EXPECT_TRUE(same_on_all_ranks(g, m->a->weight.grad()));
    // Gradients set to none: the unused ones become zeros before the Reducer reads them.
    m->zero_grad(/*set_to_none=*/true);
    m->forward(torch::ones({3, 4}), /*use_b=*/rank == 0).sum().backward();
    EXPECT_TRUE(torch::allclose(m->b->weight.grad(), torch::full({2, 4}, 1.5f)));
    EXPECT_TRUE(torch::allclose(m->a->weight.grad(), torch::full({2, 4}, 3.0f)));
  });
}

TEST(TorchDdp, ViewRejectsUnsupportedTensors) {
  EXPECT_THROW(spmd::torch::view(torch::zeros({2, 3}).t()), spmd::Error);
  EXPECT_THROW(spmd::torch::view(torch::zeros({2}, torch::kBool)), spmd::Error);
  EXPECT_EQ(spmd::torch::view(torch::zeros({2, 3}, torch::kBFloat16)).dtype, spmd::DType::BF16);
}

}  // namespace
