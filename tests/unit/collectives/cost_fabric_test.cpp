// What flows that run at once share in the cost model besides their hosts' interfaces: the
// fabric (SPMD_NET's fabric=RATE) and the shared cores' copies (cores=N@TIME@RATE).
#include <gtest/gtest.h>

#include <string>

#include "collectives/cost_model.hpp"
#include "collectives/cost_programs.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {
namespace {

// Only bandwidth counts: predictions are bytes over rates, checkable by hand.
NetModel bandwidth_only(double net_bytes_per_s) {
  NetModel m;
  m.net = {0, net_bytes_per_s};
  m.host = {0, 1e12};
  m.shm = {0, 1e12};
  m.per_message_s = 0;
  return m;
}

// fabric=RATE: every flow between hosts at once shares it besides its hosts' interfaces (an
// oversubscribed core, or the emulated cluster's one delaying relay for every link).
TEST(CostModel, AFabricIsSharedByEveryFlowBetweenHosts) {
  const NetModel parsed = parse_net_model("net=10GB@2ms,fabric=2GB");
  EXPECT_DOUBLE_EQ(parsed.fabric_bytes_per_s, 2e9);
  EXPECT_NE(parsed.describe().find("in all"), std::string::npos) << parsed.describe();
  EXPECT_DOUBLE_EQ(parse_net_model("net=10GB@2ms").fabric_bytes_per_s, 0);  // none unless given
  NetModel m = bandwidth_only(1e9);
  const NetModel open = m;
  m.fabric_bytes_per_s = 1.5e9;
  const Layout three{3, 1};
  // A ring of 3 hosts: 3 flows of 1 MB a step share 1.5 GB/s (2 ms a step, not the interface's
  // 1 ms); 4 steps for all_reduce's reduce-scatter and all-gather of 3 MB.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "ring", 3e6, three, open), 4e-3, 1e-9);
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "ring", 3e6, three, m), 8e-3, 1e-9);
  // A flat broadcast's 2 flows out of the root: its interface (2 ms) is still the narrower.
  EXPECT_NEAR(*predict_seconds(Collective::Broadcast, "flat", 1e6, three, m), 2e-3, 1e-9);
  // Every rank to every other at once: 6 blocks through the fabric (4 ms), 2 per interface.
  EXPECT_NEAR(*predict_seconds(Collective::AllToAll, "direct", 3e6, three, m), 6e6 / 1.5e9, 1e-9);
  // Programs on their critical path: two messages between different hosts at once share it.
  Programs two(4);
  two[0].push_back({{{1, 1e6}}, {}});
  two[1].push_back({{}, {0}});
  two[2].push_back({{{3, 1e6}}, {}});
  two[3].push_back({{}, {2}});
  EXPECT_NEAR(critical_path(two, Layout{4, 1}, open), 1e-3, 1e-9);
  EXPECT_NEAR(critical_path(two, Layout{4, 1}, m), 2e6 / 1.5e9, 1e-9);
  // Calls back to back: the fabric is a resource the loop's busiest time counts.
  EXPECT_NEAR(*predict_loop_seconds(Collective::AllReduce, "ring", 3 * 21845, three, m), 4 * 3 * 21845 / 1.5e9, 1e-9);
}

// cores=N@TIME@RATE: every rank shares N cores that copy each flow's bytes at both ends (and
// each shared-memory copy once), each core at RATE; the call takes at least that work over N.
TEST(CostModel, SharedCoresCopyEveryFlowAtBothEnds) {
  const NetModel parsed = parse_net_model("net=8GB@20us,cores=2@10us@9GB");
  EXPECT_DOUBLE_EQ(parsed.shared_cores.copy_bytes_per_s, 9e9);
  EXPECT_DOUBLE_EQ(parsed.shared_cores.per_message_s, 10e-6);
  EXPECT_NE(parsed.describe().find("each copying 72 Gbit/s"), std::string::npos) << parsed.describe();
  EXPECT_DOUBLE_EQ(parse_net_model("net=8GB@20us,cores=2@10us").shared_cores.copy_bytes_per_s, 0);
  for (const char* bad : {"cores=2@10us@fast", "cores=2@10us@", "cores=2@10us@9"})
    EXPECT_THROW(parse_net_model(bad), Error) << bad;
  // Links far faster than the cores, no latency, no cost per message: the cores' copies alone.
  NetModel m = bandwidth_only(1e13);
  const NetModel open = m;
  m.shared_cores = {2, 0, 1e9};
  const Layout three{3, 1};
  // A ring all_reduce of 3 MB: 4 steps of 3 flows of 1 MB, each copied twice: 24 MB on 2 cores.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "ring", 3e6, three, m), 12e-3, 1e-5);
  EXPECT_LT(*predict_seconds(Collective::AllReduce, "ring", 3e6, three, open), 1e-5);
  // A flat broadcast of 1 MB: 2 flows, 4 MB of copies; every rank to every other (direct
  // reduce_scatter of 3 MB): 6 flows of 1 MB, 12 MB.
  EXPECT_NEAR(*predict_seconds(Collective::Broadcast, "flat", 1e6, three, m), 2e-3, 1e-5);
  EXPECT_NEAR(*predict_seconds(Collective::ReduceScatter, "direct", 3e6, three, m), 6e-3, 1e-5);
  // Within a host the same: 2 hosts x 2 ranks, recursive doubling of 1 MB: 2 steps of 4 flows.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "recursive_doubling", 1e6, Layout{2, 2}, m), 8e-3, 1e-5);
  // Calls back to back take it too.
  EXPECT_NEAR(*predict_loop_seconds(Collective::AllReduce, "ring", 3e6, three, m), 12e-3, 1e-5);
}

}  // namespace
}  // namespace spmd::algo
