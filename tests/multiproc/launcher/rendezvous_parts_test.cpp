// The parts of the store rendezvous that keep its traffic linear in the nodes: the process
// counts published once (encode_counts), and the heartbeats each node reads (ring_successors).
#include <gtest/gtest.h>

#include "launcher/rendezvous/nodes.hpp"

namespace spmd::launcher::rdzv {
namespace {

TEST(RendezvousCounts, RunsOfEqualCountsReadBackTheSame) {
  EXPECT_EQ(encode_counts(std::vector<int>(256, 8)), "8*256");
  EXPECT_EQ(encode_counts({8, 8, 4, 8}), "8*2,4*1,8*1");
  EXPECT_EQ(encode_counts({0, 3}), "0*1,3*1");
  for (const std::vector<int>& counts :
       {std::vector<int>{1}, std::vector<int>(10000, 8), std::vector<int>{8, 8, 4, 8}, std::vector<int>{2, 1, 2, 1}}) {
    auto back = decode_counts(encode_counts(counts));
    ASSERT_TRUE(back.has_value()) << encode_counts(counts);
    EXPECT_EQ(*back, counts);
  }
}

TEST(RendezvousCounts, RefusesWhatIsNotAListOfRuns) {
  for (const char* bad : {"", "8", "8*", "*3", "8*0", "8*2,", ",8*2", "8*2,,1*1", "-1*2", "8*-2", "8**2", "8*2*2",
                          "a*2", "8 * 2", "99999999*1", "1*99999999", "1*600000,1*600000"})
    EXPECT_FALSE(decode_counts(bad).has_value()) << "'" << bad << "'";
}

// Each node reads the heartbeats of the next two in the ring of node ranks (the store's host
// reads every node's): every node's reading every other's costs the store N² reads a slice.
TEST(RendezvousHeartbeats, EachNodeWatchesTheNextTwoInTheRing) {
  EXPECT_EQ(ring_successors(3, 5, 2), (std::vector<int>{4, 0}));
  EXPECT_EQ(ring_successors(4, 5, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(ring_successors(0, 3, 2), (std::vector<int>{1, 2}));
  EXPECT_EQ(ring_successors(1, 2, 2), (std::vector<int>{0}));
  EXPECT_TRUE(ring_successors(0, 1, 2).empty());
}

}  // namespace
}  // namespace spmd::launcher::rdzv
