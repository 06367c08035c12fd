// The first collectives end to end: all_reduce, broadcast, barrier, all_gather on 1-4 ranks.
#include "harness.hpp"

namespace spmd::test {
namespace {

TEST(Smoke, AllReduceSumFloat) {
  for (int world : {1, 2, 3, 4}) {
    run_ranks(world, [&](ProcessGroup& g) {
      std::vector<float> v(1000);
      for (size_t i = 0; i < v.size(); ++i) v[i] = float(g.rank() + 1) * float(i % 7);
      g.all_reduce(v);
      float ranks_sum = float(world * (world + 1) / 2);
      for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(v[i], ranks_sum * float(i % 7)) << "P=" << world << " i=" << i;
    });
  }
}

TEST(Smoke, BroadcastBarrierAllGather) {
  for (int world : {1, 2, 3, 4}) {
    run_ranks(world, [&](ProcessGroup& g) {
      std::vector<int32_t> b(100, g.rank() == world - 1 ? 42 : -1);
      g.broadcast(b, world - 1);
      for (int32_t x : b) ASSERT_EQ(x, 42);
      g.barrier();
      std::vector<int64_t> in(3, g.rank()), out(3 * static_cast<size_t>(world), -1);
      g.all_gather_into(out, in);
      for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], static_cast<int64_t>(i / 3));
    });
  }
}

// Blocking calls run in the caller's thread only while nothing is queued: mixed with async
// calls they must still run in issue order (one call number each, the queue's order) and
// every Work must see its own result.
TEST(Smoke, BlockingAndAsyncCallsKeepIssueOrder) {
  for (int world : {1, 2, 3}) {
    run_ranks(world, [&](ProcessGroup& g) {
      constexpr int kRounds = 40;
      std::vector<std::vector<int32_t>> bufs(kRounds, std::vector<int32_t>(5));
      std::vector<Work> pending;
      for (int k = 0; k < kRounds; ++k) {
        std::fill(bufs[k].begin(), bufs[k].end(), (g.rank() + 1) * (k + 1));
        if (k % 3 == 2) {
          g.all_reduce(bufs[k]);  // behind the async ones still queued, or inline once they ran
        } else {
          pending.push_back(g.all_reduce_async(bufs[k]));
          if (k % 5 == 4) pending.back().wait();
        }
      }
      for (Work& w : pending) w.wait();
      const int32_t ranks_sum = world * (world + 1) / 2;
      for (int k = 0; k < kRounds; ++k)
        for (int32_t x : bufs[k]) ASSERT_EQ(x, ranks_sum * (k + 1)) << "P=" << world << " round " << k;
    });
  }
}

}  // namespace
}  // namespace spmd::test
