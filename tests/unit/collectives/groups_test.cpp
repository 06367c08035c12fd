// Subgroups: membership, rank translation, overlapping and interleaved groups, validation.
#include "harness.hpp"

namespace spmd::test {
namespace {

TEST(Groups, NewGroupMembersAndRankTranslation) {
  run_ranks(5, [](ProcessGroup& w) {
    auto g = w.new_group({4, 1, 2});  // unsorted on purpose: ranks are sorted like torch
    bool member = w.rank() == 1 || w.rank() == 2 || w.rank() == 4;
    ASSERT_EQ(g != nullptr, member);
    if (!g) return;
    EXPECT_EQ(g->size(), 3);
    EXPECT_EQ(g->ranks(), (std::vector<int>{1, 2, 4}));
    EXPECT_EQ(g->global_rank(), w.rank());
    EXPECT_EQ(get_group_rank(*g, 4), 2);
    EXPECT_EQ(get_global_rank(*g, 0), 1);
    EXPECT_EQ(get_process_group_ranks(*g), (std::vector<int>{1, 2, 4}));
    EXPECT_THROW(get_group_rank(*g, 0), Error);
    EXPECT_THROW(get_global_rank(*g, 3), Error);
    std::vector<int32_t> v(10, w.rank());
    g->all_reduce(v);
    EXPECT_EQ(v[0], 7);
    std::vector<int32_t> b(3, w.rank());
    g->broadcast(b, 4);  // root is a global rank
    EXPECT_EQ(b[0], 4);
  });
}

TEST(Groups, InvalidRankListsAreRejected) {
  run_ranks(3, [](ProcessGroup& w) {
    for (const std::vector<int>& bad : {std::vector<int>{0, 0}, std::vector<int>{0, 3}, std::vector<int>{-1},
                                        std::vector<int>{}}) {
      try {
        w.new_group(bad);
        ADD_FAILURE() << "accepted a bad rank list";
      } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << e.what();
      }
    }
    auto sub = w.new_group({0, 1});
    if (sub) {
      EXPECT_THROW(sub->new_group({0, 2}), Error);  // 2 is not in the subgroup
      std::vector<float> v(1);
      EXPECT_THROW(sub->broadcast(v, 2), Error);  // root outside the group
    }
    EXPECT_THROW(w.new_subgroups(2), Error);  // 3 ranks do not split in 2s
  });
}

TEST(Groups, OverlappingSubgroupsInterleavedWithTheWorld) {
  run_ranks(6, [](ProcessGroup& w) {
    auto halves = w.new_subgroups(3);                         // {0,1,2} {3,4,5}
    auto evens = w.new_subgroups_by_enumeration({{0, 2, 4}, {1, 3, 5}});
    auto pair = w.new_group({2, 3});                          // crosses both partitions
    ASSERT_TRUE(halves && evens);
    for (int round = 0; round < 5; ++round) {
      std::vector<int64_t> a(100, w.rank()), b(100, w.rank()), c(100, 1), d(50, w.rank());
      Work wa = halves->all_reduce_async(a);
      Work wb = evens->all_reduce_async(b);
      Work wc = w.all_reduce_async(c);
      if (pair) pair->all_reduce(d);
      wa.wait();
      wb.wait();
      wc.wait();
      EXPECT_EQ(a[0], w.rank() < 3 ? 3 : 12);
      EXPECT_EQ(b[0], w.rank() % 2 == 0 ? 6 : 9);
      EXPECT_EQ(c[0], 6);
      if (pair) {
        EXPECT_EQ(d[0], 5);
      }
    }
    auto nested = halves->new_group({halves->ranks()[0], halves->ranks()[2]});
    if (nested) {
      std::vector<int32_t> v(1, 1);
      nested->all_reduce(v);
      EXPECT_EQ(v[0], 2);
    }
  });
}

TEST(Groups, SubgroupOfOne) {
  run_ranks(2, [](ProcessGroup& w) {
    auto solo = w.new_subgroups(1);
    ASSERT_TRUE(solo);
    EXPECT_EQ(solo->size(), 1);
    std::vector<float> v(4, 2.0f);
    solo->all_reduce(v, ReduceOp::Avg);
    EXPECT_EQ(v[0], 2.0f);
    solo->barrier();
  });
}

}  // namespace
}  // namespace spmd::test
