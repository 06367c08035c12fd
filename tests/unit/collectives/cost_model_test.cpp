// The cost model: SPMD_NET's grammar, the schedules' arithmetic on shapes worked by hand, and
// selection across hosts following the model (and only there).
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "collectives/cost_model.hpp"
#include "collectives/cost_programs.hpp"
#include "collectives/select.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {
namespace {

struct NetGuard {
  explicit NetGuard(const std::string& spec) { set_net_model_override(spec); }
  ~NetGuard() { set_net_model_override(""); }
};

GroupTraits hosts(int n, int per_host, bool deterministic = false) {
  GroupTraits g;
  g.size = n * per_host;
  g.hosts = n;
  g.max_ranks_per_host = per_host;
  g.host_shm = true;
  g.deterministic = deterministic;
  return g;
}

// Only bandwidth counts: predictions are bytes over rates, checkable by hand.
NetModel bandwidth_only(double net_bytes_per_s, double host_bytes_per_s) {
  NetModel m;
  m.net = {0, net_bytes_per_s};
  m.host = {0, host_bytes_per_s};
  m.shm = {0, host_bytes_per_s};
  m.per_message_s = 0;
  return m;
}

TEST(CostModel, ParsesSpmdNet) {
  NetModel m = parse_net_model("net=1Gbit@200us");
  EXPECT_DOUBLE_EQ(m.net.bytes_per_s, 1.25e8);
  EXPECT_DOUBLE_EQ(m.net.latency_s, 200e-6);
  EXPECT_DOUBLE_EQ(m.host.bytes_per_s, NetModel{}.host.bytes_per_s);  // untouched: the default
  m = parse_net_model("net=25Gbit/s@10us,host=8GB@2us,msg=1us");
  EXPECT_DOUBLE_EQ(m.net.bytes_per_s, 25e9 / 8);
  EXPECT_DOUBLE_EQ(m.host.bytes_per_s, 8e9);
  EXPECT_DOUBLE_EQ(m.host.latency_s, 2e-6);
  EXPECT_DOUBLE_EQ(m.per_message_s, 1e-6);
  m = parse_net_model("net=1Gbit@50us,shm=10GB@3us");
  EXPECT_DOUBLE_EQ(m.shm.latency_s, 3e-6);
  EXPECT_DOUBLE_EQ(m.shm.bytes_per_s, 10e9);
  m = parse_net_model("net=100Mbit@2ms");
  EXPECT_DOUBLE_EQ(m.net.bytes_per_s, 12.5e6);
  EXPECT_DOUBLE_EQ(m.net.latency_s, 2e-3);
  EXPECT_NE(m.describe().find("100 Mbit/s 2 ms"), std::string::npos) << m.describe();
}

// cores=N@TIME: every rank shares N cores, each message costing them TIME. A call takes at least
// its messages' time on them; the links' prices are untouched where they are the larger.
TEST(CostModel, SharedCoresAreARooflineOfMessages) {
  const NetModel alone = parse_net_model("net=1Gbit@20us,host=2GB@40us,shm=20GB@20us,msg=20us");
  const NetModel shared = parse_net_model("net=1Gbit@20us,host=2GB@40us,shm=20GB@20us,msg=20us,cores=2@24us");
  EXPECT_EQ(shared.shared_cores.count, 2);
  EXPECT_DOUBLE_EQ(shared.shared_cores.per_message_s, 24e-6);
  EXPECT_NE(shared.describe().find("2 shared cores at 24 us"), std::string::npos) << shared.describe();
  EXPECT_EQ(alone.describe().find("shared cores"), std::string::npos) << alone.describe();
  auto at = [](Collective c, const char* a, size_t bytes, Layout l, const NetModel& m) {
    return *predict_seconds(c, a, bytes, l, m);
  };
  // Messages counted by hand, each 12 us of the job's time (24 us over 2 cores):
  // ring all_reduce on 4 x 2: 2 (P - 1) steps of P messages = 112
  EXPECT_NEAR(at(Collective::AllReduce, "ring", 8, {4, 2}, shared), 112 * 12e-6, 1e-9);
  // recursive doubling on 3 x 1: the fold (1), one exchange of 2 ranks (2), the hand-back (1)
  EXPECT_NEAR(at(Collective::AllReduce, "recursive_doubling", 8, {3, 1}, shared), 4 * 12e-6, 1e-9);
  // linear gather on 3 x 2: the agreement round's 3 steps of 6 messages, then 5 = 23
  EXPECT_NEAR(at(Collective::Gather, "linear", 8, {3, 2}, shared), 23 * 12e-6, 1e-9);
  // hier all_reduce on 3 x 2: recursive doubling among the 3 hosts (4); its host phases'
  // arrivals are no messages (cost_schedule.hpp, kShmMessages). With 100 us a message the
  // roofline (4 x 50 us) is above the schedule's price.
  const NetModel slow = parse_net_model("net=1Gbit@20us,host=2GB@40us,shm=20GB@20us,msg=20us,cores=2@100us");
  EXPECT_NEAR(at(Collective::AllReduce, "hier", 8, {3, 2}, slow), 4 * 50e-6, 1e-9);
  EXPECT_LT(at(Collective::AllReduce, "hier", 8, {3, 2}, alone), 4 * 50e-6);
  for (Layout l : {Layout{3, 1}, Layout{4, 2}})
    for (const char* a : {"ring", "recursive_doubling", "direct", "hier"}) {
      if (l.per_host == 1 && std::string(a) == "hier") continue;
      SCOPED_TRACE(a);
      EXPECT_GT(at(Collective::AllReduce, a, 8, l, shared), at(Collective::AllReduce, a, 8, l, alone));
      // 16 MiB: the links' time, far above the cores'
      EXPECT_DOUBLE_EQ(at(Collective::AllReduce, a, 16 << 20, l, shared), at(Collective::AllReduce, a, 16 << 20, l, alone));
    }
}

TEST(CostModel, BadSpmdNetIsAClearError) {
  for (const char* spec : {"net=1Gbit", "net=fast@1us", "net=1Gbit@1", "wire=1Gbit@1us", ",", "net=1Gbps@1us",
                           "net=-1Gbit@1us", "msg=lots", "shm=1GB", "cores=0@1us", "cores=2.5@1us", "cores=2",
                           "cores=two@1us", "cores=2x@1us", "fabric=", "fabric=fast", "fabric=2GB@1us"}) {
    try {
      parse_net_model(spec);
      ADD_FAILURE() << spec << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << spec;
      EXPECT_NE(std::string(e.what()).find("SPMD_NET"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("net=RATE@LATENCY"), std::string::npos) << e.what();
    }
  }
}

TEST(CostModel, RingMovesTwoPMinusOneOverPOfTheData) {
  const NetModel m = bandwidth_only(1e9, 1e12);
  const double s = 6e6;
  // 3 hosts x 1 rank: 2(P-1) steps of S/P, every one across a link.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "ring", 6e6, Layout{3, 1}, m), 4 * (s / 3) / 1e9, 1e-9);
  // 3 x 2: each host's interface carries one S/6 per step, 10 steps: 1.67 S.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "ring", 6e6, Layout{3, 2}, m), 10 * (s / 6) / 1e9, 1e-9);
  // hier below two 128 KiB chunks: the leaders' ring 4 steps of S/3 (1.33 S), and the local
  // phases through the slots (the leader copies both ranks' data, each way).
  const double s1 = 2e5;
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "hier", 2e5, Layout{3, 2}, m), 4 * (s1 / 3) / 1e9 + 2 * 2 * s1 / 1e12,
              1e-9);
  // Pipelined (8 chunks of 60 MB / 8): the local phases of only the first and the last chunk
  // are not hidden behind the network's.
  const double s8 = 60e6;
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "hier", 60000000, Layout{3, 2}, m),
              4 * (s8 / 3) / 1e9 + 2 * (s8 / 8) / 1e12, 1e-9);
  // all_gather ring: P-1 steps of one block.
  EXPECT_NEAR(*predict_seconds(Collective::AllGather, "ring", 1e6, Layout{4, 1}, m), 3 * 1e6 / 1e9, 1e-9);
}

TEST(CostModel, ARingOverlapsOneHopsLatencyWithTheNextHopsTransfer) {
  NetModel m = bandwidth_only(1e9, 1e12);
  m.net.latency_s = 2e-3;
  // One rank per host: every hop of the 4-step chain crosses a link, latency and bytes alike.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "ring", 3e5, Layout{3, 1}, m), 4 * (2e-3 + 1e5 / 1e9), 1e-9);
  // 3 x 2: the data crosses a link on every other hop, so 10 steps wait for 5 latencies (the
  // step-by-step sum, 10 of them, was 2.6x the 15.6 ms measured for 1 MiB with 2 ms links),
  // and the first crossing waits behind the host's own first segment.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "ring", 6e5, Layout{3, 2}, m), 5 * (2e-3 + 1e5 / 1e9) + 1e5 / 1e9,
              1e-6);  // (the local hops' copies at 1 TB/s: 0.1 us each)
  // Segments that take longer than the latency: the interface carries one per step (10 of 10
  // MB at 1 GB/s), the last one's latency on top.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "ring", 6e7, Layout{3, 2}, m), 10 * 1e7 / 1e9 + 2e-3, 1e-8);
  // A ring of 65,534 steps (4,096 x 8), extrapolated from its steady rate: one latency per 8
  // hops (the exact walk gives 8,192 of them; the extrapolation is within one).
  const double long_ring = *predict_seconds(Collective::AllReduce, "ring", 32768, Layout{4096, 8}, m);
  EXPECT_NEAR(long_ring, 8192 * (2e-3 + 1 / 1e9), 2e-3);
}

TEST(CostModel, HierChunksAsTheModelPricesThem) {
  NetModel m = bandwidth_only(125e6, 3e9);
  // Without latency the most chunks hide the most local work; with 2 ms links each chunk pays
  // the leaders' ring latencies (6 on 4 hosts) and few chunks win.
  EXPECT_EQ(hier_chunks(Collective::AllReduce, 16 << 20, 4 << 20, Layout{4, 2}, m), 8);
  EXPECT_EQ(hier_chunks(Collective::AllReduce, 1 << 20, 1 << 18, Layout{4, 2}, m), 8);  // chunks of 128 KiB
  EXPECT_EQ(hier_chunks(Collective::AllReduce, 200 << 10, 50 << 8, Layout{4, 2}, m), 1);  // below two of them
  EXPECT_EQ(hier_chunks(Collective::AllReduce, 16 << 20, 4 << 20, Layout{4, 1}, m), 1);  // nothing local to hide
  m.net.latency_s = 2e-3;  // 1 to 3 chunks priced within 5 % of one (kChunkTie): the most of them
  EXPECT_EQ(hier_chunks(Collective::AllReduce, 16 << 20, 4 << 20, Layout{4, 2}, m), 3);
  EXPECT_EQ(hier_chunks(Collective::AllReduce, 1 << 20, 1 << 18, Layout{4, 2}, m), 1);
  m.net.latency_s = 50e-6;
  const int k = hier_chunks(Collective::AllReduce, 16 << 20, 4 << 20, Layout{4, 2}, m);
  EXPECT_GT(k, 1);
  EXPECT_LE(k, 8);
}

TEST(CostModel, HierChunksTakeTheMostAmongNearTies) {
  // The links of a 1 Gbit/s grid run with a fast shm class: 3 chunks priced cheapest by 0.1 %,
  // 8 took 197 ms against 3's 203 (the local phases cost more than their price).
  const NetModel m = parse_net_model("net=116MB@37us,host=4945MB@48us,shm=20333MB@24us,msg=24us");
  EXPECT_EQ(hier_chunks(Collective::AllReduce, 16 << 20, 4 << 20, Layout{3, 2}, m), 8);
  // A tie is a tie only within 5 %: with 2 ms links every chunk's ring latencies count.
  const NetModel far = parse_net_model("net=116MB@2ms,host=4945MB@48us,shm=20333MB@24us,msg=24us");
  EXPECT_LT(hier_chunks(Collective::AllReduce, 16 << 20, 4 << 20, Layout{3, 2}, far), 8);
  EXPECT_EQ(hier_chunks(Collective::AllReduce, 1 << 20, 1 << 18, Layout{3, 2}, far), 1);
  // 1 MiB on the links a 1 Gbit/s run measured: 8 chunks priced 4.5 % above one took 11.7 ms,
  // one chunk 13.4 (its local phases, 1.6 ms, priced 0.2).
  const NetModel near = parse_net_model("net=113MB@24us,host=2986MB@53us,shm=15210MB@27us,msg=27us");
  EXPECT_EQ(hier_chunks(Collective::AllReduce, 1 << 20, 1 << 18, Layout{3, 2}, near), 8);
}

// broadcast, reduce, gather and scatter copy their data once on a host: more chunks than one
// must save 5 % by the model's price, or they keep one (near ties do not go to the most).
TEST(CostModel, RootedHierChunksOnlyWhereTheySave) {
  // A 1 Gbit/s grid run's links: the local copies are a small share, one chunk.
  const NetModel capped = parse_net_model("net=114MB@13us,host=2760MB@38us,shm=6259MB@19us,msg=19us");
  for (Collective c : {Collective::Broadcast, Collective::Reduce, Collective::Gather, Collective::Scatter})
    for (size_t bytes : {size_t{1} << 20, size_t{16} << 20}) {
      const size_t count = c == Collective::Reduce ? bytes / 4 : bytes / 6;
      EXPECT_EQ(hier_chunks(c, bytes, count, Layout{3, 2}, capped), 1) << collective_name(c) << " " << bytes;
    }
  // Links as fast as the copies: pipelined, and priced below one chunk by 5 % or more.
  const NetModel fast = parse_net_model("net=10Gbit@1us,shm=1GB@2us");
  for (Collective c : {Collective::Broadcast, Collective::Reduce, Collective::Gather, Collective::Scatter}) {
    const size_t bytes = 16 << 20, count = c == Collective::Reduce ? bytes / 4 : bytes / 6;
    EXPECT_GT(hier_chunks(c, bytes, count, Layout{3, 2}, fast), 1) << collective_name(c);
  }
  // all_reduce's near ties still go to the most chunks on the capped links.
  EXPECT_EQ(hier_chunks(Collective::AllReduce, 16 << 20, 4 << 20, Layout{3, 2}, capped), 8);
}

// reduce by ring (reduce_ring.cpp): the tree's root takes the whole vector on each of log2 P
// levels, the ring moves 2 (P - 1) / P of it; one message each way per step, many steps.
TEST(CostModel, RingReduceWhereTheTreeTakesTheVectorTwice) {
  const NetModel m = parse_net_model("net=114MB@13us,host=2760MB@38us,shm=6259MB@19us,msg=19us");
  const double tree = *predict_seconds(Collective::Reduce, "binomial", 16 << 20, Layout{3, 1}, m);
  const double ring = *predict_seconds(Collective::Reduce, "ring", 16 << 20, Layout{3, 1}, m);
  EXPECT_NEAR(tree / ring, 2.0 / (4.0 / 3), 0.1);  // 2 S against 4/3 S through the root's link
  EXPECT_EQ(cheapest_among_hosts(Collective::Reduce, 16 << 20, 3, m), "ring");
  EXPECT_EQ(cheapest_among_hosts(Collective::Reduce, 8, 3, m), "binomial");
  EXPECT_EQ(cheapest_among_hosts(Collective::Reduce, 16 << 20, 2, m), "binomial");  // one level: the whole once
}

TEST(CostModel, ContentionOnAHostsInterfaceCounts) {
  const NetModel m = bandwidth_only(1e9, 1e12);
  // Gather to rank 0 on 3 x 2: four blocks come in through host 0's interface.
  EXPECT_NEAR(*predict_seconds(Collective::Gather, "linear", 1e6, Layout{3, 2}, m), 4e6 / 1e9, 1e-9);
  // Binomial broadcast on 3 x 2 (pipelined): rank 0 sends to 1, 2 and 4; 2 to 3, 4 to 5: host
  // 0's interface carries two copies (measured: 17.5 ms for 1 MiB at 120 MB/s, flat's 35.6).
  EXPECT_NEAR(*predict_seconds(Collective::Broadcast, "binomial", 1e6, Layout{3, 2}, m), 2e6 / 1e9, 1e-9);
  EXPECT_NEAR(*predict_seconds(Collective::Broadcast, "flat", 1e6, Layout{3, 2}, m), 4e6 / 1e9, 1e-9);
  // A chain crosses each link once.
  EXPECT_NEAR(*predict_seconds(Collective::Broadcast, "chain", 1e8, Layout{3, 2}, m), 1e8 / 1e9, 2e-3);
}

TEST(CostModel, TreesAndChainsWaitForTheHopsTheyHave) {
  NetModel m = bandwidth_only(12.5e6, 1e12);
  m.net.latency_s = 1e-3;
  // A binomial broadcast on 3 ranks sends from the root to both: one latency (two levels of
  // the tree, but no rank below another's child); on 4, rank 3 is rank 2's child: two.
  EXPECT_NEAR(*predict_seconds(Collective::Broadcast, "binomial", 0, Layout{3, 1}, m), 2e-3 + 1e-3, 1e-9);
  EXPECT_NEAR(*predict_seconds(Collective::Broadcast, "binomial", 0, Layout{4, 1}, m), 2e-3 + 2e-3, 1e-9);
  // A chain forwards bytes as they arrive: 64 KiB over 3 hosts at 100 Mbit/s is one transfer,
  // a cut-through granule of fill and the two hops' latencies (measured 5.5 ms in a loop),
  // below the tree whose root sends it twice (11.0 ms).
  const double chain = *predict_seconds(Collective::Broadcast, "chain", 65536, Layout{3, 1}, m);
  const double barrier = 2e-3;
  EXPECT_NEAR(chain, barrier + 65536 / 12.5e6 + (16 << 10) / 12.5e6 + 2e-3, 1e-9);
  EXPECT_LT(chain, *predict_seconds(Collective::Broadcast, "binomial", 65536, Layout{3, 1}, m));
  // Its hops within a host wait for the host's latency, not the network's (after the
  // agreement's 3 rounds on 6 ranks, each crossing a link).
  m.host.latency_s = 1e-6;
  EXPECT_NEAR(*predict_seconds(Collective::Broadcast, "chain", 0, Layout{3, 2}, m), 3e-3 + 2e-3 + 3e-6, 1e-9);
  // One rank per host: hier is its own phase among hosts, not ranked beside it.
  EXPECT_FALSE(predict_seconds(Collective::Broadcast, "hier", 65536, Layout{3, 1}, m).has_value());
  EXPECT_TRUE(predict_seconds(Collective::Broadcast, "hier", 65536, Layout{3, 2}, m).has_value());
}

TEST(CostModel, CallsBackToBackTakeTheBusiestLinksTime) {
  NetModel m = bandwidth_only(12.5e6, 1e12);
  m.net.latency_s = 10e-6;  // 100 Mbit/s, 10 us: a 64 KiB vector's 5.2 ms outweigh the latencies
  auto loop = [&](Collective c, const char* a, size_t bytes, Layout l) { return *predict_loop_seconds(c, a, bytes, l, m); };
  auto one = [&](Collective c, const char* a, size_t bytes, Layout l) { return *predict_seconds(c, a, bytes, l, m); };
  const double vector = 65536 / 12.5e6;  // 64 KiB through one link
  // Recursive doubling on 3 hosts: the folding rank's link carries the fold and the exchange
  // in, the exchange and the hand-back out: two vectors a call, not one call's three steps.
  EXPECT_NEAR(loop(Collective::AllReduce, "recursive_doubling", 65536, {3, 1}), 2 * vector, 1e-9);
  EXPECT_GT(one(Collective::AllReduce, "recursive_doubling", 65536, {3, 1}), 3 * vector);
  // A chain broadcast: one vector through every link, whatever the chain's length; the binomial
  // tree's root sends it twice on 3 hosts; the ring all_gather 2 blocks through each host.
  EXPECT_NEAR(loop(Collective::Broadcast, "chain", 65536, {4, 2}), vector, 1e-9);
  EXPECT_NEAR(loop(Collective::Broadcast, "binomial", 65536, {3, 1}), 2 * vector, 1e-9);
  EXPECT_NEAR(loop(Collective::AllGather, "ring", 65536, {3, 1}), 2 * vector, 1e-9);
  // Where latencies outweigh the bytes, a call still waits for them (its latencies alone).
  EXPECT_NEAR(loop(Collective::AllGather, "ring", 8, {3, 1}), 20e-6, 1e-8);
  // Above kLoopOverlapBytes a call waits for its messages: one call's price.
  EXPECT_DOUBLE_EQ(loop(Collective::AllReduce, "recursive_doubling", 1 << 20, {3, 1}),
                   one(Collective::AllReduce, "recursive_doubling", 1 << 20, {3, 1}));
  // Never above one call's price, at any shape (hier's local phases included).
  for (const char* a : {"ring", "recursive_doubling", "halving_doubling", "direct", "hier"})
    for (Layout l : {Layout{3, 2}, Layout{4, 2}, Layout{5, 3}, Layout{100, 8}})
      EXPECT_LE(loop(Collective::AllReduce, a, 65536, l), one(Collective::AllReduce, a, 65536, l) * (1 + 1e-12)) << a;
}

TEST(CostModel, BruckPaysLog2PLatencies) {
  NetModel m = bandwidth_only(1e9, 1e12);
  m.net.latency_s = 1e-3;
  // 5 ranks: distances 1, 2, 4 (1, 2 and 1 blocks of 100 bytes), and two local copies.
  EXPECT_NEAR(*predict_seconds(Collective::AllGather, "bruck", 100, Layout{5, 1}, m), 3e-3 + 400e-9 + 500e-12, 1e-10);
  EXPECT_NEAR(*predict_seconds(Collective::AllGather, "ring", 100, Layout{5, 1}, m), 4e-3 + 400e-9, 1e-10);
}

TEST(CostModel, CriticalPathSharesLinksAndSendsEarly) {
  const NetModel m = bandwidth_only(1e9, 1e12);
  // Recursive doubling on 3 hosts, 1 MB: rank 1 receives rank 0's fold and rank 2's vector at
  // once (2 MB in), then exchanges with 2 and hands the result back to 0: 4 ms.
  const std::vector<std::vector<ProgramStep>> rd3 = {
      {{{{1, 1e6}}, {}}, {{}, {1}}},
      {{{}, {0}}, {{{2, 1e6}}, {2}}, {{{0, 1e6}}, {}}},
      {{{{1, 1e6}}, {1}}},
  };
  EXPECT_NEAR(critical_path(rd3, Layout{3, 1}, m), 4e-3, 1e-9);
  // With latencies only: rank 2 sent beside the fold, so 2 latencies.
  NetModel slow = bandwidth_only(1e15, 1e15);
  slow.net.latency_s = 1e-3;
  EXPECT_NEAR(critical_path(rd3, Layout{3, 1}, slow), 2e-3, 1e-8);
  // A message ready later queues behind the ones on its link: 0 -> 1 (1 ms), then 1 forwards
  // to 2 while 0's second message to 1 waits for its first: both 1 MB, ends at 2 ms.
  const std::vector<std::vector<ProgramStep>> chain = {
      {{{{1, 1e6}}, {}}, {{{1, 1e6}}, {}}},
      {{{}, {0}}, {{{2, 1e6}}, {0}}},
      {{{}, {1}}},
  };
  EXPECT_NEAR(critical_path(chain, Layout{3, 1}, m), 2e-3, 1e-9);
  // A receive no rank sends is a bug in a schedule, said, not a hang.
  const std::vector<std::vector<ProgramStep>> waits = {{{{}, {1}}}, {}};
  EXPECT_THROW(critical_path(waits, Layout{2, 1}, m), Error);
  // The price is the lower of the critical path and lockstep phases (3 transfers here).
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "recursive_doubling", 1000000, Layout{3, 1}, m), 3e-3, 1e-9);
  // A power of two has nothing to send early: log2(P) steps of the whole vector either way.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "recursive_doubling", 1000000, Layout{4, 1}, m), 2e-3, 1e-9);
}

TEST(CostModel, LatencyAndMessagesCount) {
  NetModel m = bandwidth_only(1e9, 1e12);
  m.net.latency_s = 1e-3;
  // Recursive doubling on 4 hosts: 2 steps. On 3, the fold and the hand-back, and between them
  // the exchange of the rank that did not fold, which left beside the fold: 2 latencies, not 3.
  // On 6 the pairs that fold exchange with each other first: the fold, 2 steps, the hand-back.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "recursive_doubling", 0, Layout{4, 1}, m), 2e-3, 1e-9);
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "recursive_doubling", 0, Layout{3, 1}, m), 2e-3, 1e-9);
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "recursive_doubling", 0, Layout{5, 1}, m), 3e-3, 1e-9);
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "recursive_doubling", 0, Layout{6, 1}, m), 3e-3, 1e-9);
  // Halving-doubling on 3: its halves wait for each other, 4 latencies as step by step.
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "halving_doubling", 0, Layout{3, 1}, m), 4e-3, 1e-9);
  EXPECT_NEAR(*predict_seconds(Collective::Barrier, "dissemination", 0, Layout{8, 1}, m), 3e-3, 1e-9);
  m.per_message_s = 1e-6;  // direct: 2(P-1) messages a step, 2 of them free
  EXPECT_NEAR(*predict_seconds(Collective::AllReduce, "direct", 0, Layout{8, 1}, m), 2 * (1e-3 + 12e-6), 1e-9);
  EXPECT_FALSE(predict_seconds(Collective::AllReduce, "shm_flat", 8, Layout{2, 1}, m).has_value());
}

TEST(CostModel, ScalesToThousandsOfNodes) {
  const NetModel m = parse_net_model("net=100Gbit@5us,host=20GB@1us");
  for (int c = 1; c <= static_cast<int>(Collective::Barrier); ++c) {
    GroupTraits g = hosts(4096, 8);
    std::vector<Ranked> ranked = rank_by_model(static_cast<Collective>(c), 1 << 20, g);
    ASSERT_FALSE(ranked.empty()) << collective_name(static_cast<Collective>(c));
    for (const Ranked& r : ranked) EXPECT_TRUE(std::isfinite(r.seconds) && r.seconds > 0) << r.algorithm->name;
  }
}

TEST(Select, AcrossHostsTheModelDecides) {
  {
    NetGuard slow_links("net=1Gbit@50us");
    // 8 B on 3 x 2: two latencies between hosts either way (recursive doubling's fold is on
    // the host, hier's leaders are 3), a tie the model leaves to the trials; direct's extra
    // messages and the ring's 10 steps come after.
    const std::vector<Ranked> small = rank_by_model(Collective::AllReduce, 8, hosts(3, 2));
    ASSERT_GE(small.size(), 3u);
    std::set<std::string> tied{small[0].algorithm->name, small[1].algorithm->name};
    EXPECT_EQ(tied, (std::set<std::string>{"hier", "recursive_doubling"}));
    EXPECT_LT(small[1].seconds, small[0].seconds * 1.05);
    EXPECT_EQ(std::string(select(Collective::AllReduce, 8, hosts(4, 1)).name), "recursive_doubling");
    EXPECT_EQ(std::string(select(Collective::AllReduce, 16 << 20, hosts(3, 2)).name), "hier");
    EXPECT_EQ(std::string(select(Collective::Broadcast, 64 << 20, hosts(3, 2)).name), "chain");
    // The leaders' phase inside hier: one exchange on two hosts; for 64 MiB halving-doubling on
    // 16 (the ring's bytes, fewer latencies), the ring on 12 (no fold of 4 hosts' data first).
    EXPECT_EQ(cheapest_among_hosts(Collective::AllReduce, 1 << 20, 2, net_model()), "recursive_doubling");
    EXPECT_EQ(cheapest_among_hosts(Collective::AllReduce, 64 << 20, 16, net_model()), "halving_doubling");
    EXPECT_EQ(cheapest_among_hosts(Collective::AllReduce, 64 << 20, 12, net_model()), "ring");
    EXPECT_EQ(cheapest_among_hosts(Collective::Broadcast, 64 << 20, 16, net_model()), "chain");
    // all_gather among hosts: Bruck's log2 H latencies for small blocks on many hosts, the ring
    // (no local copies) for large ones on a few.
    EXPECT_EQ(cheapest_among_hosts(Collective::AllGather, 4 << 10, 512, net_model()), "bruck");
    EXPECT_EQ(cheapest_among_hosts(Collective::AllGather, 64 << 20, 4, net_model()), "ring");
    // all_to_all of small blocks among 8 hosts x 8 ranks: hier's one message per pair of hosts
    // beats 63 steps that each pay the latency; large blocks are not worth four local copies,
    // and the flat exchange sends them in two steps (32 peers, then 31: direct), not pairwise's 63.
    EXPECT_EQ(std::string(select(Collective::AllToAll, 64 * 64, hosts(8, 8)).name), "hier");
    EXPECT_EQ(std::string(select(Collective::AllToAll, 64 << 20, hosts(8, 8)).name), "direct");
    EXPECT_LT(*predict_seconds(Collective::AllToAll, "direct", 64 << 20, Layout{8, 8}, net_model()),
              *predict_seconds(Collective::AllToAll, "pairwise", 64 << 20, Layout{8, 8}, net_model()));
    // reduce_scatter's direct is one step with every peer however many there are; all_to_all's
    // takes a second step (one more latency) beyond 33 ranks.
    const double rs = *predict_seconds(Collective::ReduceScatter, "direct", 64 * 64, Layout{8, 8}, net_model());
    const double a2a = *predict_seconds(Collective::AllToAll, "direct", 64 * 64, Layout{8, 8}, net_model());
    EXPECT_NEAR(a2a - rs, net_model().net.latency_s, 1e-12);
  }
  {
    // A network faster than the hosts' memory: the local phases of hier no longer pay.
    NetGuard fast_links("net=100Gbit@1us,host=1GB@1us");
    EXPECT_NE(std::string(select(Collective::AllReduce, 16 << 20, hosts(3, 2)).name), "hier");
  }
  // Deterministic mode: only what reduces in rank order.
  EXPECT_EQ(std::string(select(Collective::AllReduce, 16 << 20, hosts(3, 2, true)).name), "direct");
  // One host: the tables, not the model.
  GroupTraits one;
  one.size = one.max_ranks_per_host = 4;
  one.shm = one.host_shm = one.cma = true;
  EXPECT_EQ(std::string(select(Collective::AllReduce, 8, one).name), "shm_flat");
}

// Uneven all_to_all across hosts (bytes unknown to the others): the algorithm whose price is
// nearest the cheapest at every size. With 2 ms links pairwise's P-1 latencies lose to direct's
// one (4 x 2 over 1 Gbit/s + 2 ms, 1 MiB even: pairwise 34.5 ms, direct 16.7, 2026-11-28), and
// hier, which runs uneven splits as direct, is not a candidate. With links of no latency and a
// dear message, direct's extra messages lose to pairwise's steps.
TEST(Select, UnevenAllToAllAcrossHostsTakesWhatLosesLeastAnywhere) {
  {
    NetGuard far("net=1Gbit@2ms");
    const std::vector<RankedUneven> ranked = rank_uneven_by_model(Collective::AllToAll, hosts(4, 2));
    ASSERT_EQ(ranked.size(), 2u);
    EXPECT_EQ(std::string(ranked[0].algorithm->name), "direct");
    EXPECT_LT(ranked[0].worst_ratio, 1.05);
    EXPECT_EQ(std::string(ranked[1].algorithm->name), "pairwise");
    EXPECT_GT(ranked[1].worst_ratio, 5.0);  // 7 latencies against 1, for small calls
    EXPECT_EQ(ranked[1].worst_at, kUnevenSizes[0]);
    EXPECT_EQ(std::string(select(Collective::AllToAll, kUnevenSplits, hosts(4, 2)).name), "direct");
  }
  {
    NetGuard near("net=1Gbit@1us,host=1GB@1us,msg=50us");
    EXPECT_EQ(std::string(select(Collective::AllToAll, kUnevenSplits, hosts(3, 1)).name), "pairwise");
  }
  // SPMD_ALGO still wins.
  set_algorithm_override("all_to_all=pairwise");
  EXPECT_EQ(std::string(select(Collective::AllToAll, kUnevenSplits, hosts(4, 2)).name), "pairwise");
  set_algorithm_override("");
}

}  // namespace
}  // namespace spmd::algo
