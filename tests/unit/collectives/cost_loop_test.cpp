// The cost model's calls back to back (predict_loop_seconds, cost_programs.hpp's loop_period):
// a rooted call's agreement round of the next call runs beside this call's last messages.
#include <gtest/gtest.h>

#include "collectives/cost_model.hpp"
#include "collectives/cost_programs.hpp"

namespace spmd::algo {
namespace {

// Latencies alone: 1 ms a hop between hosts, every rate without limit, no per-message work.
NetModel latencies_only(double latency_s, double per_message_s = 0) {
  NetModel m;
  m.net = {latency_s, 1e30};
  m.host = {latency_s, 1e30};
  m.shm = {0, 1e30};
  m.per_message_s = per_message_s;
  return m;
}

Programs rooted(int ranks, void (*data)(Programs&, double, bool), bool to_root) {
  Programs p(static_cast<size_t>(ranks));
  program::dissemination_barrier(p);
  data(p, 8, to_root);
  return p;
}

TEST(CostLoop, EveryRankReceivesWhatIsSentToIt) {
  // critical_path raises where a rank waits for a message no rank sends: every builder on 1 to
  // 17 ranks, calls back to back.
  const NetModel m = latencies_only(1e-3);
  for (int n = 1; n <= 17; ++n) {
    for (bool to_root : {false, true}) {
      EXPECT_NO_THROW(loop_period(rooted(n, program::binomial, to_root), Layout{n, 1}, m)) << n;
      EXPECT_NO_THROW(loop_period(rooted(n, program::star, to_root), Layout{n, 1}, m)) << n;
    }
    Programs chain(static_cast<size_t>(n));
    program::chain(chain, 8);
    EXPECT_NO_THROW(loop_period(chain, Layout{n, 1}, m)) << n;
  }
}

TEST(CostLoop, TheNextAgreementRunsBesideTheLastMessages) {
  const NetModel m = latencies_only(1e-3);
  // One call on 3 ranks: the barrier's 2 rounds, then the root's data, 3 latencies. Back to
  // back, the root starts the next barrier as it sends: 2 a call (over 2 ms links, 4.2 ms a call
  // measured where one call waits 6.2).
  for (auto* data : {program::binomial, program::star}) {
    const Programs one = rooted(3, data, false);
    EXPECT_NEAR(critical_path(one, Layout{3, 1}, m), 3e-3, 1e-9);
    EXPECT_NEAR(loop_period(one, Layout{3, 1}, m), 2e-3, 1e-9);
  }
  // A binomial reduce: its leaf of the second level sends beside the first level (3 latencies
  // for one call, where the schedule's levels in lockstep say 4), 2 back to back (measured over
  // 2 ms links: 4.18 ms a call).
  const Programs reduce = rooted(3, program::binomial, true);
  EXPECT_NEAR(critical_path(reduce, Layout{3, 1}, m), 3e-3, 1e-9);
  EXPECT_NEAR(loop_period(reduce, Layout{3, 1}, m), 2e-3, 1e-9);
  // The same through the model, and never above one call's price.
  EXPECT_NEAR(*predict_loop_seconds(Collective::Broadcast, "binomial", 8, Layout{3, 1}, m), 2e-3, 1e-9);
  EXPECT_NEAR(*predict_loop_seconds(Collective::Reduce, "linear", 8, Layout{3, 1}, m), 2e-3, 1e-9);
  for (Collective c : {Collective::Broadcast, Collective::Reduce, Collective::Gather, Collective::Scatter})
    for (const char* a : {"binomial", "flat", "chain", "linear", "hier"})
      for (Layout l : {Layout{3, 1}, Layout{3, 2}, Layout{4, 2}, Layout{64, 8}}) {
        const auto one = predict_seconds(c, a, 64, l, m), loop = predict_loop_seconds(c, a, 64, l, m);
        ASSERT_EQ(one.has_value(), loop.has_value());
        if (one) {
          EXPECT_LE(*loop, *one * (1 + 1e-12)) << collective_name(c) << " " << a << " " << l.hosts << "x" << l.per_host;
        }
      }
  // hier's representatives run the flat algorithm's loop; its local phases add their latencies.
  NetModel with_local = m;
  with_local.shm.latency_s = 1e-6;
  EXPECT_NEAR(*predict_loop_seconds(Collective::Broadcast, "hier", 8, Layout{3, 2}, with_local), 2e-3 + 1e-6, 1e-8);
}

TEST(CostLoop, WhereTheLatencyIsTheRanksWorkTheirWorkSetsTheRate) {
  // A 26 us hop of which each end's work is 13 us (no wire): a call takes at least the root's 6
  // messages (the barrier's 2 sent and 2 received, the data to 2 ranks), 78 us, 3 hops' worth
  // and more, as the 69-93 us measured over 1 Gbit/s without delay, where the latencies alone
  // would say 2 hops; never more than a call on its own.
  const NetModel m = latencies_only(26e-6, 13e-6);
  const Programs flat = rooted(3, program::star, false);
  const double period = loop_period(flat, Layout{3, 1}, m);
  EXPECT_GE(period, 78e-6 - 1e-12);
  EXPECT_LE(period, critical_path(flat, Layout{3, 1}, m, 13e-6));
  // With 2 ms of wire besides, the wire sets it again: 2 hops' wire and some of the work.
  const NetModel far = latencies_only(2e-3 + 26e-6, 13e-6);
  const double far_period = loop_period(flat, Layout{3, 1}, far);
  EXPECT_GT(far_period, 2 * 2e-3 + 2 * 26e-6);
  EXPECT_LT(far_period, 2 * 2e-3 + period);
}

TEST(CostLoop, LargeRootedCallsStillRunTheNextAgreementBesideTheirData) {
  // 2 ms links at 2 GB/s: a flat broadcast of 1 MiB from the root of 3 x 1 sends 2 MiB out of
  // its interface. One call: the barrier's 2 latencies, then the data, 1 latency and 2 MiB.
  // Back to back the next barrier runs beside the data: 2 latencies and 2 MiB a call (over
  // unshaped links with 2 ms, 5.07 ms measured, where one call is priced 6.2 ms and more).
  NetModel m = latencies_only(2e-3);
  m.net.bytes_per_s = 2e9;
  const double mib = 1 << 20, data = 2 * mib / 2e9;
  const Layout three{3, 1};
  const double one = *predict_seconds(Collective::Broadcast, "flat", 1 << 20, three, m);
  const double loop = *predict_loop_seconds(Collective::Broadcast, "flat", 1 << 20, three, m);
  EXPECT_NEAR(one, 3 * 2e-3 + data, 1e-6);
  EXPECT_NEAR(loop, 2 * 2e-3 + data, 0.02 * loop);
  // Algorithms without an agreement round of their own keep one call's price from kLoopOverlapBytes.
  EXPECT_EQ(*predict_loop_seconds(Collective::AllReduce, "ring", 1 << 20, three, m),
            *predict_seconds(Collective::AllReduce, "ring", 1 << 20, three, m));
  // Over links whose bytes dominate (1 Gbit/s, 26 us) the saving is one latency of 17 ms.
  NetModel cable = latencies_only(26e-6);
  cable.net.bytes_per_s = 120e6;
  for (const char* a : {"flat", "binomial", "hier"}) {
    const Layout l = std::string_view(a) == "hier" ? Layout{3, 2} : three;
    const double c1 = *predict_seconds(Collective::Broadcast, a, 1 << 20, l, cable);
    const double cl = *predict_loop_seconds(Collective::Broadcast, a, 1 << 20, l, cable);
    EXPECT_LE(cl, c1) << a;
    EXPECT_GT(cl, c1 - 3 * 26e-6) << a;
  }
}

TEST(CostLoop, HiersLatenciesAreThoseOfTheAlgorithmItRunsAmongHosts) {
  // The links of the grid of 2026-12-03 20:11 (1 Gbit/s + 200 us). Among 3 hosts the model runs
  // hier all_reduce's 64 KiB as a ring (its cheapest by one call), 4 latencies; calls back to
  // back take at least the ring's own loop among the leaders (3 x 2 measured 1,711 us, the
  // ring on 3 x 1 1,544; priced with recursive doubling's 2 latencies and the ring's bytes,
  // 747).
  const NetModel m = parse_net_model("net=117MB@298us,host=644MB@29us,shm=1579MB@14us,msg=14us");
  const size_t bytes = 64 << 10;
  const std::string_view among = cheapest_among_hosts(Collective::AllReduce, bytes, 3, m);
  EXPECT_EQ(among, "ring");
  const double leaders = *predict_loop_seconds(Collective::AllReduce, among, bytes, Layout{3, 1}, m);
  const double hier = *predict_loop_seconds(Collective::AllReduce, "hier", bytes, Layout{3, 2}, m);
  EXPECT_GE(hier, leaders);
  EXPECT_GE(leaders, 4 * 298e-6);
  // And so for every collective hier runs a flat algorithm among hosts for, at sizes the loops
  // overlap, on 3 and 4 hosts: never under that algorithm's own loop (all_gather's leaders
  // move a host's 2 blocks).
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::Broadcast, Collective::Reduce})
    for (int hosts : {3, 4})
      for (size_t b : {size_t{8}, size_t{4} << 10, size_t{32} << 10, size_t{64} << 10}) {
        const size_t among_bytes = c == Collective::AllGather ? 2 * b : b;
        const std::string_view flat = cheapest_among_hosts(c, among_bytes, hosts, m);
        EXPECT_GE(*predict_loop_seconds(c, "hier", b, Layout{hosts, 2}, m),
                  *predict_loop_seconds(c, flat, among_bytes, Layout{hosts, 1}, m) * 0.999)
            << collective_name(c) << " " << hosts << " hosts, " << b << " B";
      }
}

}  // namespace
}  // namespace spmd::algo
