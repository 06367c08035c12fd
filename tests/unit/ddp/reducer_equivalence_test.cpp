// Data-parallel training with the Reducer equals single-process training on the whole batch:
// W ranks, each on its shard of every global batch, end with the parameters one process gets
// from the same global batches (to float tolerance), and replicas stay identical after every
// step.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "dataset.hpp"
#include "mlp.hpp"
#include "spmd/ddp.hpp"
#include "thread_ranks.hpp"

namespace spmd {
namespace {

constexpr int kFeatures = 8, kHidden = 12, kClasses = 3;
constexpr size_t kGlobalBatch = 12;  // divisible by 1, 2, 3, 4
constexpr int kSteps = 6;
constexpr uint64_t kSeed = 5;

std::vector<std::vector<float>> params_of(mlp::Mlp& m) {
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < m.num_parameters(); ++i) out.push_back(m.param(i));
  return out;
}

std::vector<spmd::Parameter> register_params(mlp::Mlp& m) {
  std::vector<spmd::Parameter> ps;
  for (size_t i = 0; i < m.num_parameters(); ++i) ps.push_back({m.param(i), m.grad(i), m.shape(i), m.name(i)});
  return ps;
}

// One process on the whole global batch, starting from rank 0's initial weights.
std::vector<std::vector<float>> reference(const mlp::Dataset& data, int micro_steps, float momentum) {
  mlp::Mlp m({kFeatures, kHidden, kHidden, kClasses}, kSeed * 1000);
  std::vector<float> xs;
  std::vector<int32_t> ys;
  for (int s = 0; s < kSteps; ++s) {
    std::vector<size_t> idx;
    for (size_t k = 0; k < kGlobalBatch * static_cast<size_t>(micro_steps); ++k)
      idx.push_back((static_cast<size_t>(s) * kGlobalBatch * static_cast<size_t>(micro_steps) + k) % data.size());
    m.zero_grad();
    m.forward(data.gather(idx.data(), idx.size(), xs, ys));
    m.backward(1.0f / static_cast<float>(idx.size()));
    m.sgd_step(0.1f, momentum);
  }
  return params_of(m);
}

// W ranks; each global batch (micro_steps * kGlobalBatch rows) is split in W contiguous shards,
// and each shard into micro_steps micro-batches, all but the last under no_sync.
void data_parallel(int world, int micro_steps, float momentum, ReducerOptions opt,
                   std::vector<std::vector<std::vector<float>>>& final_params) {
  const mlp::Dataset data = mlp::make_clusters(200, kFeatures, kClasses, 1.0f, 1, 2);
  std::mutex mu;
  std::vector<std::vector<std::vector<std::vector<float>>>> per_step(kSteps);  // [step][rank]
  for (auto& s : per_step) s.resize(static_cast<size_t>(world));
  final_params.assign(static_cast<size_t>(world), {});
  testing::run_ranks(world, [&](ProcessGroup& g, int rank) {
    // Different initial weights per rank: the Reducer must broadcast rank 0's.
    mlp::Mlp m({kFeatures, kHidden, kHidden, kClasses}, kSeed * 1000 + static_cast<uint64_t>(rank));
    Reducer reducer(register_params(m), g, opt);
    const size_t shard = kGlobalBatch / static_cast<size_t>(world);  // rows per micro-batch per rank
    const size_t global = kGlobalBatch * static_cast<size_t>(micro_steps);
    std::vector<float> xs;
    std::vector<int32_t> ys;
    for (int s = 0; s < kSteps; ++s) {
      m.zero_grad();
      for (int micro = 0; micro < micro_steps; ++micro) {
        std::vector<size_t> idx;
        for (size_t k = 0; k < shard; ++k) {
          // Rank r's rows of micro-batch `micro`: together the ranks and micro-batches cover
          // exactly the reference's global batch.
          const size_t pos = static_cast<size_t>(micro) * kGlobalBatch + static_cast<size_t>(rank) * shard + k;
          idx.push_back((static_cast<size_t>(s) * global + pos) % data.size());
        }
        m.forward(data.gather(idx.data(), idx.size(), xs, ys));
        // Per-rank gradients are scaled so that the Reducer's average over W ranks is the mean
        // over the global batch.
        const float scale = static_cast<float>(world) / static_cast<float>(global);
        auto mark = [&](size_t i) { reducer.mark_ready(i); };
        if (micro + 1 < micro_steps) {
          auto guard = reducer.no_sync();
          m.backward(scale, mark);
          reducer.finish();
        } else {
          m.backward(scale, mark);
          reducer.finish();
        }
      }
      m.sgd_step(0.1f, momentum);
      std::lock_guard lk(mu);
      per_step[static_cast<size_t>(s)][static_cast<size_t>(rank)] = params_of(m);
    }
    std::lock_guard lk(mu);
    final_params[static_cast<size_t>(rank)] = params_of(m);
  });
  for (int s = 0; s < kSteps; ++s)
    for (int r = 1; r < world; ++r)
      ASSERT_EQ(per_step[static_cast<size_t>(s)][static_cast<size_t>(r)], per_step[static_cast<size_t>(s)][0])
          << "replica " << r << " diverged from rank 0 after step " << s;
}

void expect_close(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b, float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    for (size_t k = 0; k < a[i].size(); ++k)
      ASSERT_NEAR(a[i][k], b[i][k], tol * (1.0f + std::fabs(b[i][k]))) << "parameter " << i << " element " << k;
  }
}

class Equivalence : public ::testing::TestWithParam<int> {};

TEST_P(Equivalence, MatchesOneProcessOnTheWholeBatch) {
  const int world = GetParam();
  const mlp::Dataset data = mlp::make_clusters(200, kFeatures, kClasses, 1.0f, 1, 2);
  const auto want = reference(data, 1, 0.9f);
  for (size_t cap : {size_t{0}, size_t{256}}) {  // default buckets (one), and many small ones
    ReducerOptions opt;
    if (cap) opt.first_bucket_cap_bytes = opt.bucket_cap_bytes = cap;
    std::vector<std::vector<std::vector<float>>> got;
    data_parallel(world, 1, 0.9f, opt, got);
    expect_close(got[0], want, 1e-5f);
  }
}

TEST_P(Equivalence, NoSyncAccumulationEqualsTheLargeBatchStep) {
  const int world = GetParam();
  const mlp::Dataset data = mlp::make_clusters(200, kFeatures, kClasses, 1.0f, 1, 2);
  const auto want = reference(data, 3, 0.0f);
  ReducerOptions opt;
  opt.first_bucket_cap_bytes = opt.bucket_cap_bytes = 512;
  std::vector<std::vector<std::vector<float>>> got;
  data_parallel(world, 3, 0.0f, opt, got);
  expect_close(got[0], want, 1e-5f);
}

TEST_P(Equivalence, GradientAsBucketViewMatchesToo) {
  const int world = GetParam();
  const mlp::Dataset data = mlp::make_clusters(200, kFeatures, kClasses, 1.0f, 1, 2);
  // With bucket views the model's own gradient buffers are not used by the Reducer, so here
  // the model writes into reducer.gradient(i) by copying after backward: a framework would
  // point its gradients at those views instead.
  const auto want = reference(data, 1, 0.0f);
  std::vector<std::vector<float>> got;
  std::mutex mu;
  testing::run_ranks(world, [&](ProcessGroup& g, int rank) {
    mlp::Mlp m({kFeatures, kHidden, kHidden, kClasses}, kSeed * 1000 + static_cast<uint64_t>(rank));
    auto ps = register_params(m);
    for (auto& p : ps) p.grad = {};
    ReducerOptions opt;
    opt.gradient_as_bucket_view = true;
    opt.first_bucket_cap_bytes = opt.bucket_cap_bytes = 300;
    Reducer reducer(std::move(ps), g, opt);
    const size_t shard = kGlobalBatch / static_cast<size_t>(world);
    std::vector<float> xs;
    std::vector<int32_t> ys;
    for (int s = 0; s < kSteps; ++s) {
      std::vector<size_t> idx;
      for (size_t k = 0; k < shard; ++k)
        idx.push_back((static_cast<size_t>(s) * kGlobalBatch + static_cast<size_t>(rank) * shard + k) % data.size());
      m.zero_grad();
      m.forward(data.gather(idx.data(), idx.size(), xs, ys));
      m.backward(1.0f / static_cast<float>(shard), [&](size_t i) {
        TensorView v = reducer.gradient(i);
        std::copy(m.grad(i).begin(), m.grad(i).end(), v.as<float>());
        reducer.mark_ready(i);
      });
      reducer.finish();
      for (size_t i = 0; i < m.num_parameters(); ++i) {
        TensorView v = reducer.gradient(i);
        std::copy(v.as<float>(), v.as<float>() + v.count, m.grad(i).begin());
      }
      m.sgd_step(0.1f, 0.0f);
    }
    EXPECT_EQ(reducer.rebuild_count(), 1);
    if (rank == 0) {
      std::lock_guard lk(mu);
      got = params_of(m);
    }
  });
  expect_close(got, want, 1e-5f);
}

INSTANTIATE_TEST_SUITE_P(World, Equivalence, ::testing::Values(1, 2, 3, 4));

}  // namespace
}  // namespace spmd
