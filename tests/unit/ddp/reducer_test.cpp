// Reducer behaviour: bucket layout and the one rebuild, cross-rank checks, unused parameters,
// compression hooks, dtypes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>

#include "spmd/ddp.hpp"
#include "spmd/error.hpp"
#include "thread_ranks.hpp"

namespace spmd {
namespace {

// A "model" of plain float vectors: parameter i has sizes[i] elements.
struct Toy {
  std::vector<std::vector<float>> data, grad;
  explicit Toy(const std::vector<size_t>& sizes, float init = 0) {
    for (size_t n : sizes) {
      data.emplace_back(n, init);
      grad.emplace_back(n, 0.0f);
    }
  }
  std::vector<Parameter> params() {
    std::vector<Parameter> ps;
    for (size_t i = 0; i < data.size(); ++i) ps.push_back({data[i], grad[i], {}, "p" + std::to_string(i)});
    return ps;
  }
};

TEST(BucketAssignment, ReverseOrderFirstBucketSmall) {
  // 10 parameters of 100 bytes; first cap 250, then 450: reverse order {9,8} {7..4} {3..0}.
  std::vector<size_t> bytes(10, 100), order(10);
  std::iota(order.rbegin(), order.rend(), size_t{0});
  auto b = assign_buckets(bytes, std::vector<DType>(10, DType::F32), order, 250, 450);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0], (std::vector<size_t>{9, 8}));
  EXPECT_EQ(b[1], (std::vector<size_t>{7, 6, 5, 4}));
  EXPECT_EQ(b[2], (std::vector<size_t>{3, 2, 1, 0}));
  // A parameter larger than the cap gets a bucket of its own; dtypes never mix.
  auto c = assign_buckets({1000, 10, 10}, {DType::F32, DType::F64, DType::F32}, {0, 1, 2}, 100, 100);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], (std::vector<size_t>{0}));
  EXPECT_EQ(c[1], (std::vector<size_t>{1}));
  EXPECT_EQ(c[2], (std::vector<size_t>{2}));
  EXPECT_THROW(assign_buckets({1, 1}, {DType::F32, DType::F32}, {0, 0}, 1, 1), Error);
}

TEST(Reducer, BroadcastsRankZerosParametersAndAverages) {
  testing::run_ranks(3, [](ProcessGroup& g, int rank) {
    Toy t({5, 3}, static_cast<float>(rank + 1));
    Reducer r(t.params(), g);
    EXPECT_EQ(t.data[0], std::vector<float>(5, 1.0f));  // rank 0's values everywhere
    for (int step = 0; step < 3; ++step) {
      for (size_t i = 0; i < 2; ++i) std::fill(t.grad[i].begin(), t.grad[i].end(), static_cast<float>(rank * (step + 1)));
      r.mark_ready(1);
      r.mark_ready(0);
      r.finish();
      EXPECT_EQ(t.grad[0], std::vector<float>(5, static_cast<float>(step + 1)));  // mean of 0, s, 2s
    }
    EXPECT_EQ(r.iteration(), 3u);
  });
}

TEST(Reducer, RebuildsBucketsOnceFromRankZerosOrder) {
  std::mutex mu;
  std::vector<std::vector<std::vector<size_t>>> before(3), after(3), later(3);
  testing::run_ranks(3, [&](ProcessGroup& g, int rank) {
    Toy t(std::vector<size_t>(6, 16));  // 64 bytes each
    ReducerOptions opt;
    opt.first_bucket_cap_bytes = 128;
    opt.bucket_cap_bytes = 128;
    Reducer r(t.params(), g, opt);
    const auto b0 = r.bucket_indices();
    // Rank 0 marks in a scrambled order; the others in yet another one.
    const std::vector<size_t> order = rank == 0 ? std::vector<size_t>{2, 0, 4, 1, 5, 3}
                                                : std::vector<size_t>{5, 4, 3, 2, 1, 0};
    for (int it = 0; it < 3; ++it) {
      for (size_t i = 0; i < 6; ++i) std::fill(t.grad[i].begin(), t.grad[i].end(), static_cast<float>(rank + i));
      for (size_t i : order) r.mark_ready(i);
      r.finish();
      for (size_t i = 0; i < 6; ++i) EXPECT_EQ(t.grad[i][0], static_cast<float>(1 + i));  // mean of i, i+1, i+2
      EXPECT_EQ(r.rebuild_count(), 1);
      if (it == 0) {
        std::lock_guard lk(mu);
        before[static_cast<size_t>(rank)] = b0;
        after[static_cast<size_t>(rank)] = r.bucket_indices();
      }
    }
    std::lock_guard lk(mu);
    later[static_cast<size_t>(rank)] = r.bucket_indices();
  });
  using B = std::vector<std::vector<size_t>>;
  EXPECT_EQ(before[0], (B{{5, 4}, {3, 2}, {1, 0}}));
  EXPECT_EQ(after[0], (B{{2, 0}, {4, 1}, {5, 3}}));  // rank 0's observed order decides
  for (int r = 1; r < 3; ++r) EXPECT_EQ(after[static_cast<size_t>(r)], after[0]);
  EXPECT_EQ(later, after);  // only once
}

TEST(Reducer, MismatchedShapesAcrossRanksAreNamed) {
  std::mutex mu;
  std::vector<std::string> messages(2);
  EXPECT_THROW(testing::run_ranks(2, [&](ProcessGroup& g, int rank) {
                 Toy t({4, rank == 0 ? size_t{6} : size_t{7}});
                 try {
                   Reducer r(t.params(), g);
                 } catch (const Error& e) {
                   EXPECT_EQ(e.kind(), ErrorKind::Mismatch);
                   std::lock_guard lk(mu);
                   messages[static_cast<size_t>(rank)] = e.what();
                   throw;
                 }
               }),
               std::runtime_error);
  for (const auto& m : messages) {
    EXPECT_NE(m.find("parameter 1 is f32[6] on rank 0 but f32[7] on rank 1"), std::string::npos) << m;
  }
  EXPECT_THROW(testing::run_ranks(2,
                                  [&](ProcessGroup& g, int rank) {
                                    Toy t(rank == 0 ? std::vector<size_t>{4, 4} : std::vector<size_t>{4});
                                    Reducer r(t.params(), g);
                                  }),
               std::runtime_error);
}

TEST(Reducer, UnmarkedParameterIsAnErrorNamingIt) {
  testing::run_ranks(2, [](ProcessGroup& g, int rank) {
    Toy t({3, 3, 3});
    ReducerOptions opt;
    opt.first_bucket_cap_bytes = opt.bucket_cap_bytes = 12;  // one bucket per parameter
    Reducer r(t.params(), g, opt);
    r.mark_ready(2);
    r.mark_ready(0);
    try {
      r.finish();
      ADD_FAILURE() << "finish() accepted an unmarked parameter";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("parameter 1 ('p1')"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("find_unused_parameters"), std::string::npos);
    }
    // The state was reset: a complete iteration works afterwards.
    for (auto& gr : t.grad) std::fill(gr.begin(), gr.end(), static_cast<float>(rank));
    for (size_t i = 0; i < 3; ++i) r.mark_ready(i);
    r.finish();
    EXPECT_EQ(t.grad[1], std::vector<float>(3, 0.5f));
    r.mark_ready(0);
    EXPECT_THROW(r.mark_ready(0), Error);  // twice in one iteration
    EXPECT_THROW(r.mark_ready(7), Error);
  });
}

TEST(Reducer, FindUnusedParametersTreatsThemAsReady) {
  testing::run_ranks(2, [](ProcessGroup& g, int rank) {
    Toy t({2, 2, 2});
    ReducerOptions opt;
    opt.find_unused_parameters = true;
    opt.first_bucket_cap_bytes = opt.bucket_cap_bytes = 8;
    Reducer r(t.params(), g, opt);
    for (auto& gr : t.grad) std::fill(gr.begin(), gr.end(), 0.0f);
    // Rank 0 uses parameter 1, rank 1 does not (its gradient stays zero).
    if (rank == 0) std::fill(t.grad[1].begin(), t.grad[1].end(), 4.0f);
    r.mark_ready(2);
    if (rank == 0) r.mark_ready(1);
    r.mark_ready(0);
    r.finish();
    EXPECT_EQ(t.grad[1], std::vector<float>(2, 2.0f));
    EXPECT_EQ(r.rebuild_count(), 0);  // as torch: no rebuild with find_unused_parameters
  });
}

TEST(Reducer, NoSyncDoesNotCommunicate) {
  testing::run_ranks(2, [](ProcessGroup& g, int rank) {
    Toy t({4});
    Reducer r(t.params(), g);
    {
      auto guard = r.no_sync();
      t.grad[0].assign(4, static_cast<float>(rank + 1));
      r.mark_ready(0);
      r.finish();
      EXPECT_EQ(t.grad[0], std::vector<float>(4, static_cast<float>(rank + 1)));  // untouched
    }
    for (auto& v : t.grad[0]) v += 1.0f;  // the synced micro-step accumulates on top
    r.mark_ready(0);
    r.finish();
    EXPECT_EQ(t.grad[0], std::vector<float>(4, 2.5f));  // mean of 2 and 3
  });
}

void check_hook(CommHook hook, float rel_tol) {
  testing::run_ranks(3, [&](ProcessGroup& g, int rank) {
    Toy t({1000, 37});
    Reducer r(t.params(), g);
    r.register_comm_hook(hook);
    for (int step = 0; step < 2; ++step) {
      for (size_t i = 0; i < 2; ++i)
        for (size_t k = 0; k < t.grad[i].size(); ++k)
          t.grad[i][k] = std::sin(static_cast<float>(k + i) * 0.37f) * static_cast<float>(rank + 1) * 1e-2f;
      r.mark_ready(1);
      r.mark_ready(0);
      r.finish();
      size_t inexact = 0;  // compression must actually have happened
      for (size_t i = 0; i < 2; ++i)
        for (size_t k = 0; k < t.grad[i].size(); ++k) {
          const float want = std::sin(static_cast<float>(k + i) * 0.37f) * 2.0f * 1e-2f;  // mean of 1, 2, 3
          ASSERT_NEAR(t.grad[i][k], want, rel_tol * 2e-2f) << "element " << k;
          if (t.grad[i][k] != want) ++inexact;
        }
      EXPECT_GT(inexact, t.grad[0].size() / 2);
    }
  });
}

TEST(Reducer, Fp16HookIsApproximatelyTheAverage) { check_hook(comm_hooks::fp16_compress(), 2e-3f); }
TEST(Reducer, Bf16HookIsApproximatelyTheAverage) { check_hook(comm_hooks::bf16_compress(), 2e-2f); }

TEST(Reducer, MixedDtypesAndSynchronousHooks) {
  testing::run_ranks(2, [](ProcessGroup& g, int rank) {
    std::vector<double> pd(3, 0.0), gd(3);
    std::vector<float> pf(2, 0.0f), gf(2);
    std::vector<Parameter> ps{{pd, gd, {3}, "d"}, {pf, gf, {2}, "f"}};
    Reducer r(std::move(ps), g);
    EXPECT_EQ(r.bucket_indices().size(), 2u);
    int calls = 0;
    r.register_comm_hook([&](TensorView b, ProcessGroup& pg) -> HookResult {
      ++calls;
      pg.all_reduce(b, ReduceOp::Max);  // done synchronously: an empty HookResult
      return {};
    });
    gd.assign(3, rank + 0.5);
    gf.assign(2, static_cast<float>(rank) - 3.0f);
    r.mark_ready(0);
    r.mark_ready(1);
    r.finish();
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(gd, std::vector<double>(3, 1.5));
    EXPECT_EQ(gf, std::vector<float>(2, -2.0f));
  });
}

TEST(Reducer, RejectsBadParameters) {
  testing::run_ranks(1, [](ProcessGroup& g, int) {
    std::vector<float> p(4), gr(3);
    EXPECT_THROW(Reducer({{p, gr, {}, "w"}}, g), Error);
    std::vector<float> gr4(4);
    EXPECT_THROW(Reducer({{p, gr4, {2, 3}, "w"}}, g), Error);
    EXPECT_THROW(Reducer({{p, TensorView{}, {}, "w"}}, g), Error);  // no gradient buffer
  });
}

}  // namespace
}  // namespace spmd
