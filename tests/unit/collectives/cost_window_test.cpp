// The cost model's window (SPMD_NET's window=BYTES): a flow between hosts that fits in what TCP
// keeps in flight arrives one latency after it leaves; a longer one moves at the rate.
#include <gtest/gtest.h>

#include <string>

#include "collectives/cost_model.hpp"
#include "collectives/cost_programs.hpp"

namespace spmd::algo {
namespace {

// 1 GB/s and 1 ms between hosts, nothing else costs: checkable by hand.
NetModel long_links(double window_bytes) {
  NetModel m;
  m.net = {1e-3, 1e9};
  m.host = {0, 1e12};
  m.shm = {0, 1e12};
  m.per_message_s = 0;
  m.window_bytes = window_bytes;
  return m;
}

TEST(CostModel, AWindowParsesAndIsNoneUnlessGiven) {
  EXPECT_DOUBLE_EQ(parse_net_model("net=300MB@2ms,window=512K").window_bytes, 512 << 10);
  EXPECT_DOUBLE_EQ(parse_net_model("net=300MB@2ms").window_bytes, 0);
  EXPECT_NE(parse_net_model("net=300MB@2ms,window=1M").describe().find("1048576 B in one latency"), std::string::npos);
  EXPECT_DOUBLE_EQ(NetModel{}.paced(1), 1);  // no window: every byte waits on the rate
}

TEST(CostModel, FlowsWithinTheWindowTakeOneLatency) {
  const NetModel w = long_links(1e6), open = long_links(0);
  const Layout three{3, 1};
  // A ring all_reduce of 3 MB on 3 hosts: 4 steps of 1 MB flows. Within a 1 MB window each
  // step is its latency; without one, its latency and 1 ms of bytes.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "ring", 3e6, three, w), 4e-3, 1e-9);
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "ring", 3e6, three, open), 8e-3, 1e-9);
  // 6 MB: 2 MB flows, beyond the window, move at the rate throughout (not 1 MB of them).
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "ring", 6e6, three, w), 4 * 3e-3, 1e-9);
  // Every rank to every other: 1 MB blocks, within the window; 2 of them per interface.
  EXPECT_NEAR(*predict_seconds(Collective::AllToAll, "direct", 3e6, three, w), 1e-3, 1e-9);
  EXPECT_NEAR(*predict_seconds(Collective::AllToAll, "direct", 3e6, three, open), 3e-3, 1e-9);
  // On the critical path: a message within the window holds its links for no time.
  Programs two(2);
  two[0].push_back({{{1, 1e6}}, {}});
  two[1].push_back({{}, {0}});
  EXPECT_NEAR(critical_path(two, Layout{2, 1}, w), 1e-3, 1e-9);
  EXPECT_NEAR(critical_path(two, Layout{2, 1}, open), 2e-3, 1e-9);
}

TEST(CostModel, AFabricWaitsOnlyOnBytesBeyondTheWindow) {
  // The fabric's rate is what flows beyond the window read (cost_model.sh takes it from a ring
  // of 4 MiB): within the window flows pass it as they pass the interfaces. All to all of
  // 3 MB on 3 hosts behind a 1 GB/s fabric: six 1 MB flows, one latency within a 1 MB window;
  // without one the fabric's 6 ms beside the latency.
  NetModel w = long_links(1e6), open = long_links(0);
  w.fabric_bytes_per_s = open.fabric_bytes_per_s = 1e9;
  EXPECT_NEAR(*predict_seconds(Collective::AllToAll, "direct", 3e6, Layout{3, 1}, w), 1e-3, 1e-9);
  EXPECT_NEAR(*predict_seconds(Collective::AllToAll, "direct", 3e6, Layout{3, 1}, open), 7e-3, 1e-9);
}

}  // namespace
}  // namespace spmd::algo
