// Trials (collectives/trials.hpp): across hosts, the model's near ties are timed on the group's
// first calls of a size class (on one host, the shared-memory algorithms from 16 KiB), and the
// fastest by the slowest rank's medians serves from then on. Here the schedule and the decision
// with the times handed in; ranks as threads (on faked hosts) in conformance_test.cpp
// (TrialsInAGroup).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "collectives/cost_model.hpp"
#include "collectives/select.hpp"
#include "collectives/trials.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {
namespace {

// Links like a 1 Gbit/s run's calibration (docs/cost_model_grid.md) with slow shared memory:
// at 64 KiB on 3 hosts of 2 the model prices the flat algorithms and hier close.
struct NetGuard {
  explicit NetGuard(const std::string& spec) { set_net_model_override(spec); }
  ~NetGuard() { set_net_model_override(""); }
};
const char* const kLinks = "net=113MB@15us,host=3390MB@45us,shm=1100MB@22us,msg=22us";

GroupTraits hosts(int n, int per_host) {
  GroupTraits g;
  g.size = n * per_host;
  g.hosts = n;
  g.max_ranks_per_host = per_host;
  g.host_shm = true;
  return g;
}

// Runs the trials of one class: `times(slot)` is this rank's seconds for candidate `slot`.
// Returns the candidates in the model's order and what every call ran.
template <typename Times>
std::vector<const Algorithm*> run_trials(Trials& trials, Collective c, size_t bytes, const GroupTraits& g, int rounds,
                                         Times times, std::vector<const Algorithm*>* ran = nullptr) {
  std::vector<const Algorithm*> candidates;
  const double cheapest = rank_by_model(c, bytes, g)[0].seconds;
  for (const Ranked& r : rank_by_model(c, bytes, g))
    if (candidates.size() < Trials::kMaxCandidates && r.seconds <= Trials::near_for(cheapest) * cheapest)
      candidates.push_back(r.algorithm);
  const Trials::Visit visit = Trials::visit_for(cheapest);
  const size_t n = candidates.size(), calls = Trials::calls_per_class(n, visit, rounds);
  EXPECT_EQ(calls, rounds * n * visit.calls);
  EXPECT_LE(calls, Trials::most_calls(rounds));
  for (size_t call = 0; call < calls; ++call) {
    const Algorithm* a = trials.choose(c, bytes, g);
    if (ran) ran->push_back(a);
    EXPECT_EQ(trials.timing(), call % visit.calls >= visit.calls - visit.timed) << "call " << call;
    size_t slot = 0;
    while (slot < n && candidates[slot] != a) ++slot;
    EXPECT_LT(slot, n) << "call " << call << " ran " << (a ? a->name : "nothing") << ", not a candidate";
    const bool last = trials.record(times(slot));
    EXPECT_EQ(last, call + 1 == calls) << "call " << call;
  }
  return candidates;
}

TEST(Trials, TimeEveryNearCandidateInRotatingRoundsThenKeepTheFastest) {
  NetGuard links(kLinks);
  const GroupTraits g = hosts(3, 2);
  Trials trials(3);
  std::vector<const Algorithm*> ran;
  std::vector<const Algorithm*> candidates;
  candidates = run_trials(trials, Collective::AllReduce, 64 << 10, g, 3,
                          [](size_t slot) { return slot == 1 ? 1e-3 : 2e-3; }, &ran);
  ASSERT_GE(candidates.size(), 2u) << "the model should price two all_reduce algorithms near at 64 KiB here";
  const size_t n = candidates.size();
  ASSERT_GE(rank_by_model(Collective::AllReduce, 64 << 10, g)[0].seconds, Trials::kShortCall);
  const size_t visit = Trials::visit_for(rank_by_model(Collective::AllReduce, 64 << 10, g)[0].seconds).calls;
  for (size_t round = 0; round < 3; ++round)  // every candidate once per round, the order rotating,
    for (size_t i = 0; i < n; ++i)             // a visit's calls each
      for (size_t j = 0; j < visit; ++j)
        EXPECT_EQ(ran[(round * n + i) * visit + j], candidates[(i + round) % n]) << round << " " << i;
  std::vector<double> medians = trials.exchanged();
  ASSERT_EQ(medians.size(), n);
  EXPECT_DOUBLE_EQ(medians[1], 1e-3);
  medians[0] = 1.5e-3;  // another rank was slower: the slowest rank's medians decide
  const std::string line = trials.settle(medians, g);
  EXPECT_NE(line.find(std::string(candidates[1]->name) + " from now on"), std::string::npos) << line;
  EXPECT_NE(line.find("64 KiB-128 KiB"), std::string::npos) << line;
  // Settled for the whole class, untimed; another class starts its own trials.
  EXPECT_EQ(trials.choose(Collective::AllReduce, 100 << 10, g), candidates[1]);
  EXPECT_FALSE(trials.timing());
  EXPECT_EQ(trials.choose(Collective::AllReduce, 70 << 10, g), candidates[1]);
  const Algorithm* other = trials.choose(Collective::AllReduce, 40 << 10, g);
  EXPECT_TRUE(other == nullptr || other == rank_by_model(Collective::AllReduce, 40 << 10, g)[0].algorithm);
}

// A rank's reading of a candidate is the median over each visit's pairs of consecutive timed
// calls of their mean: where the ranks fall out of step, one rank's calls alternate short and
// long (recursive doubling over 2 ms links: 2.2 and 4.4 ms, 3.3 a call in a loop).
TEST(Trials, AReadingIsTheMedianOfConsecutivePairsMeans) {
  EXPECT_DOUBLE_EQ(Trials::reading({2.2, 4.4, 2.2, 4.4, 2.2, 4.4, 2.2, 4.4, 2.2}, 3), 3.3);
  EXPECT_DOUBLE_EQ(Trials::reading({4.4, 2.2, 4.4, 4.4, 2.2, 4.4}, 3), 3.3);
  // Pairs stay within a visit: (1, 1), (9, 9), (1, 1), not (1, 9) across two.
  EXPECT_DOUBLE_EQ(Trials::reading({1, 1, 9, 9, 1, 1}, 2), 1);
  EXPECT_DOUBLE_EQ(Trials::reading({3, 1, 2}, 1), 2);  // a visit timing one call: single calls
  EXPECT_DOUBLE_EQ(Trials::reading({}, 2), 0);
  EXPECT_EQ(Trials::readings(12, 4), 9u);  // 3 visits timing 4 calls: 3 pairs each
  EXPECT_EQ(Trials::readings(21, 7), 18u);
  EXPECT_EQ(Trials::readings(10, 1), 10u);  // single calls
}

// ...so a candidate whose calls alternate 1 and 3 ms reads 2 and beats one that takes 2.5 ms
// each call, which a median of single calls (3 ms) would have kept.
TEST(Trials, CallsThatAlternateAreJudgedByWhatALoopTakes) {
  NetGuard links(kLinks);
  const GroupTraits g = hosts(3, 2);
  Trials trials(3);
  size_t calls_of_second = 0;
  const auto candidates = run_trials(trials, Collective::AllReduce, 64 << 10, g, 3, [&](size_t slot) {
    if (slot != 1) return 2.5e-3;
    return calls_of_second++ % 2 ? 3e-3 : 1e-3;
  });
  ASSERT_GE(candidates.size(), 2u);
  ASSERT_GE(Trials::visit_for(rank_by_model(Collective::AllReduce, 64 << 10, g)[0].seconds).timed, 2u);
  const std::vector<double> readings = trials.exchanged();
  ASSERT_EQ(readings.size(), candidates.size());
  EXPECT_DOUBLE_EQ(readings[0], 2.5e-3);
  EXPECT_DOUBLE_EQ(readings[1], 2e-3);
  const std::string line = trials.settle(readings, g);
  EXPECT_NE(line.find(std::string(candidates[1]->name) + " from now on"), std::string::npos) << line;
  EXPECT_NE(line.find("pairs of calls:"), std::string::npos) << line;
}

// A visit lasts about kVisitSeconds as the model prices its calls, its last half timed: long
// enough for a candidate's connections to carry what a loop keeps them carrying (TCP widens a
// window only as traffic fills it), and at least 3 calls, the third reading what a loop takes.
TEST(Trials, VisitsLastAboutThirtyMillisecondsAsPriced) {
  auto visit = [](double priced) {
    const Trials::Visit v = Trials::visit_for(priced);
    return std::to_string(v.calls) + "/" + std::to_string(v.timed);
  };
  EXPECT_EQ(visit(100e-6), "8/4");    // under kShortCall: the short calls' visits
  EXPECT_EQ(visit(200e-6), "24/12");  // 150 calls wanted, kMostVisitCalls
  EXPECT_EQ(visit(1.18e-3), "24/12");  // 4 x 2 all_to_all of 64 KiB over 1 Gbit/s + 200 us
  EXPECT_EQ(visit(1.5e-3), "21/10");
  EXPECT_EQ(visit(5.87e-3), "6/3");    // 3 x 1 all_gather of 1 MiB over 1 Gbit/s
  EXPECT_EQ(visit(13.5e-3), "3/1");    // 4 x 2 all_to_all of 1 MiB
  EXPECT_EQ(visit(0.4), "3/1");
  EXPECT_EQ(Trials::most_calls(3), 3 * Trials::kMaxCandidates * Trials::kMostVisitCalls);
}

// Calls priced under kShortCall (8 B here: tens of microseconds) are tried too, in longer
// visits that time their last four calls: each candidate's median is of rounds x 4 readings.
TEST(Trials, ShortCallsAreTriedInLongerVisits) {
  NetGuard links(kLinks);
  const GroupTraits g = hosts(3, 2);
  ASSERT_LT(rank_by_model(Collective::AllReduce, 8, g)[0].seconds, Trials::kShortCall);
  Trials trials(3);
  std::vector<const Algorithm*> ran;
  auto candidates = run_trials(trials, Collective::AllReduce, 8, g, 3,
                               [](size_t slot) { return slot == 1 ? 20e-6 : 60e-6; }, &ran);
  ASSERT_GE(candidates.size(), 2u) << "the model should price two all_reduce algorithms near at 8 B here";
  const size_t n = candidates.size(), visit = Trials::kShortVisit.calls;
  ASSERT_EQ(ran.size(), 3 * n * visit);
  for (size_t v = 0; v < 3 * n; ++v)
    for (size_t j = 1; j < visit; ++j) EXPECT_EQ(ran[v * visit + j], ran[v * visit]) << "visit " << v;
  std::vector<double> medians = trials.exchanged();
  ASSERT_EQ(medians.size(), n);
  EXPECT_DOUBLE_EQ(medians[0], 60e-6);
  EXPECT_DOUBLE_EQ(medians[1], 20e-6);
  const std::string line = trials.settle(medians, g);
  EXPECT_NE(line.find("median of 9 pairs of calls:"), std::string::npos) << line;  // 3 visits of 4 timed
  EXPECT_EQ(trials.choose(Collective::AllReduce, 8, g), candidates[1]) << line;
}

// ...and what the model prices within kShortNear (3x) of the cheapest, not kNear (2x): at 12 B
// on 3 x 1 the ring is priced 2.4x below direct, which took 63-64 us in loops to the ring's 85-86.
TEST(Trials, ShortCallsTryWhatIsPricedWithinThreeTimes) {
  NetGuard links("net=113MB@13us,host=1336MB@50us,shm=5805MB@25us,msg=25us");  // 1 Gbit/s, 2026-11-29
  const GroupTraits g = hosts(3, 1);
  const std::vector<Ranked> ranked = rank_by_model(Collective::ReduceScatter, 12, g);
  ASSERT_GE(ranked.size(), 2u);
  const double ratio = ranked[1].seconds / ranked[0].seconds;
  ASSERT_GT(ratio, Trials::kNear) << ranked[1].algorithm->name << " should be priced beyond kNear here";
  ASSERT_LE(ratio, Trials::kShortNear);
  Trials trials(3);
  std::vector<const Algorithm*> ran;
  run_trials(trials, Collective::ReduceScatter, 12, g, 3, [](size_t slot) { return slot == 1 ? 60e-6 : 90e-6; }, &ran);
  EXPECT_NE(std::find(ran.begin(), ran.end(), ranked[1].algorithm), ran.end()) << ranked[1].algorithm->name;
  const std::string line = trials.settle(trials.exchanged(), g);
  EXPECT_EQ(trials.choose(Collective::ReduceScatter, 12, g), ranked[1].algorithm) << line;
  // Calls priced from kShortCall keep kNear: the same ratio at 1 MiB would not be tried.
  EXPECT_EQ(Trials::near_for(Trials::kShortCall), Trials::kNear);
}

// Across hosts the model's first four by one call's price are tried: 3 x 2 all_reduce of 64 KiB
// over 1 Gbit/s + 200 us (the links a grid measured, 2026-12-03) prices hier, ring and direct
// before recursive doubling, which ran fastest in that grid's loops (1,382 us; hier 1,716).
TEST(Trials, AcrossHostsTheModelsFirstFourAreTried) {
  NetGuard links("net=108MB@321us,host=565MB@30us,shm=3664MB@15us,msg=15us");
  const GroupTraits g = hosts(3, 2);
  const size_t bytes = 64 << 10;
  const std::vector<Ranked> ranked = rank_by_model(Collective::AllReduce, bytes, g);
  const std::vector<Ranked> tried = Trials::candidates_across_hosts(Collective::AllReduce, bytes, g);
  ASSERT_EQ(tried.size(), Trials::kMaxCandidates);
  for (size_t i = 0; i < tried.size(); ++i) {
    EXPECT_EQ(tried[i].algorithm, ranked[i].algorithm) << i;
    EXPECT_LE(tried[i].seconds, Trials::kNear * ranked[0].seconds) << tried[i].algorithm->name;
  }
  EXPECT_STREQ(tried[3].algorithm->name, "recursive_doubling");
  Trials trials(3);
  std::vector<const Algorithm*> ran;
  const auto candidates = run_trials(trials, Collective::AllReduce, bytes, g, 3,
                                     [](size_t slot) { return slot == 3 ? 1.38e-3 : 1.7e-3; }, &ran);
  ASSERT_EQ(candidates.size(), 4u);
  const std::string line = trials.settle(trials.exchanged(), g);
  EXPECT_EQ(trials.choose(Collective::AllReduce, bytes, g), tried[3].algorithm) << line;
  // One host's trials keep three: the table's choice and two more.
  EXPECT_EQ(Trials::kMaxOneHostCandidates, 3u);
  EXPECT_EQ(Trials::most_calls(3, Trials::kOneHostRounds), 3 * 4 * Trials::kMostVisitCalls);
}

TEST(Trials, TheMarginFollowsHowFarTheModelSetThemApart) {
  EXPECT_DOUBLE_EQ(Trials::keep_margin(1e-3, 1.002e-3), Trials::kTieKeep);  // a tie: the trials decide
  EXPECT_NEAR(Trials::keep_margin(1e-3, 1.1e-3), 0.10, 1e-12);
  EXPECT_DOUBLE_EQ(Trials::keep_margin(1e-3, 1.8e-3), Trials::kKeep);
}

TEST(Trials, TheModelsChoiceStaysUnlessBeatenByMoreThanTheMargin) {
  NetGuard links(kLinks);
  const GroupTraits g = hosts(3, 2);
  const std::vector<Ranked> ranked = rank_by_model(Collective::AllReduce, 64 << 10, g);
  ASSERT_GE(ranked.size(), 2u);
  const double margin = Trials::keep_margin(ranked[0].seconds, ranked[1].seconds);
  for (const double beaten_by : {margin * 0.9, margin * 1.1}) {
    Trials trials(2);
    auto candidates = run_trials(trials, Collective::AllReduce, 64 << 10, g, 2,
                                 [&](size_t slot) { return slot == 1 ? 1e-3 : 1e-3 * (1 + beaten_by); });
    ASSERT_GE(candidates.size(), 2u);
    std::vector<double> m = trials.exchanged();
    const std::string line = trials.settle(m, g);
    const bool kept = beaten_by < margin;
    EXPECT_EQ(line.find("(the model's choice)") != std::string::npos, kept) << line;
    EXPECT_EQ(trials.choose(Collective::AllReduce, 64 << 10, g), candidates[kept ? 0 : 1]) << line;
  }
}

// Uneven all_to_all: no size to price, so every algorithm that runs uneven splits is tried (hier,
// which runs them as direct, is not), the model's least-worst first, in the short calls'
// visits; the fastest by the margin the model's worst ratios set serves every uneven call after.
TEST(Trials, UnevenAllToAllTriesEveryAlgorithmThatRunsIt) {
  NetGuard links(kLinks);  // per message 22 us against 15 of latency: the model's first is pairwise
  const GroupTraits g = hosts(4, 2);
  const std::vector<RankedUneven> ranked = rank_uneven_by_model(Collective::AllToAll, g);
  ASSERT_EQ(ranked.size(), 2u);
  ASSERT_EQ(std::string(ranked[0].algorithm->name), "pairwise");
  Trials trials(3);
  const size_t visit = Trials::kUnevenVisit.calls, calls = 3 * 2 * visit;
  for (size_t call = 0; call < calls; ++call) {
    const Algorithm* a = trials.choose(Collective::AllToAll, kUnevenSplits, g, 64 + call % 3);
    ASSERT_NE(a, nullptr) << "call " << call;
    EXPECT_EQ(a, ranked[(call / visit % 2 + call / visit / 2) % 2].algorithm) << "call " << call;
    EXPECT_EQ(trials.timing(), call % visit >= visit - Trials::kUnevenVisit.timed) << "call " << call;
    const bool direct = std::string(a->name) == "direct";
    EXPECT_EQ(trials.record(direct ? 662e-6 : 890e-6), call + 1 == calls) << "call " << call;  // 4 x 2, 64 B, 100 Mbit/s
    EXPECT_EQ(trials.exchange_due(), call + 1 == calls) << "call " << call;
  }
  // This rank's medians, then the most it moved in one call.
  std::vector<double> m = trials.exchanged();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[2], 66.0);
  const std::string line = trials.settle(m, g);
  EXPECT_NE(line.find("trials of all_to_all of uneven splits (at most 64 B-128 B a rank) on 4 hosts"), std::string::npos)
      << line;
  EXPECT_NE(line.find("direct from now on (the model chose pairwise)"), std::string::npos) << line;
  EXPECT_FALSE(trials.exchange_due());
  EXPECT_EQ(std::string(trials.choose(Collective::AllToAll, kUnevenSplits, g, 64)->name), "direct");
  EXPECT_FALSE(trials.timing());
}

// The uneven class was tried at its first calls' size; every kUnevenCheckCalls calls the group
// reads what it moves now, and from 4x more (or less) tries its candidates again, ordered and
// priced by the model at that size.
TEST(Trials, UnevenAllToAllIsTriedAgainWhenItsSizeMoves) {
  NetGuard links(kLinks);
  const GroupTraits g = hosts(3, 1);
  Trials trials(3);
  auto settle_at = [&](size_t own, double direct_s, double pairwise_s) {
    for (size_t call = 0; call < 3 * 2 * Trials::kUnevenVisit.calls; ++call) {
      const Algorithm* a = trials.choose(Collective::AllToAll, kUnevenSplits, g, own);
      EXPECT_NE(a, nullptr) << "call " << call;
      if (!a) return std::string();
      trials.record(std::string(a->name) == "direct" ? direct_s : pairwise_s);
    }
    EXPECT_TRUE(trials.exchange_due());
    return trials.settle(trials.exchanged(), g);
  };
  // 3 x 1 over 1 Gbit/s, 64 B: a tie, the model's first (pairwise) stays.
  std::string line = settle_at(60, 63e-6, 60e-6);
  EXPECT_NE(line.find("pairwise from now on (the model's choice)"), std::string::npos) << line;
  // Calls of a similar size: the check changes nothing.
  for (size_t call = 1; call <= Trials::kUnevenCheckCalls; ++call) {
    EXPECT_EQ(std::string(trials.choose(Collective::AllToAll, kUnevenSplits, g, 200)->name), "pairwise");
    EXPECT_EQ(trials.exchange_due(), call == Trials::kUnevenCheckCalls) << "call " << call;
  }
  EXPECT_EQ(trials.exchanged(), std::vector<double>{200.0});
  EXPECT_EQ(trials.settle(std::vector<double>{200.0}, g), "");
  // Then another rank moves a megabyte: at the next check the class is tried again.
  for (size_t call = 1; call <= Trials::kUnevenCheckCalls; ++call) {
    EXPECT_EQ(std::string(trials.choose(Collective::AllToAll, kUnevenSplits, g, 60)->name), "pairwise");
    EXPECT_EQ(trials.exchange_due(), call == Trials::kUnevenCheckCalls) << "call " << call;
  }
  line = trials.settle(std::vector<double>{double(1 << 20)}, g);
  EXPECT_NE(line.find("uneven all_to_all on 3 hosts now moves at most 1 MiB-2 MiB a rank (its trials saw 32 B-64 B, "
                      "settling on pairwise): trying"),
            std::string::npos)
      << line;
  // Its trials now price the candidates at that size; direct, 1.77x faster, wins.
  line = settle_at(1 << 20, 7.8e-3, 13.8e-3);
  EXPECT_NE(line.find("of uneven splits (at most 1 MiB-2 MiB a rank)"), std::string::npos) << line;
  EXPECT_NE(line.find("direct from now on"), std::string::npos) << line;
  EXPECT_NE(line.find(" ms (priced "), std::string::npos) << line;
  EXPECT_EQ(std::string(trials.choose(Collective::AllToAll, kUnevenSplits, g, 1 << 20)->name), "direct");
}

GroupTraits one_host(int ranks) {
  GroupTraits g = hosts(1, ranks);
  g.shm = true;
  g.cma = true;
  return g;
}

// One host: from kOneHostFrom bytes (16 KiB) the table's choice (first) and the collective's other
// shared-memory algorithms are visited in kOneHostRounds rotating rounds of kOneHostVisit; another
// serves the class where it beats the table's by kOneHostKeep (4 ranks, 1 MiB: the table's
// shm_rs_ag took 1.58 ms where shm_flat took 0.60 in one minute).
TEST(Trials, OneHostTriesTheSharedMemoryAlgorithmsFromSixteenKiB) {
  const GroupTraits g = one_host(4);
  const Algorithm* table = &select(Collective::AllReduce, 1 << 20, g);
  for (const double beaten_by : {Trials::kOneHostKeep * 0.9, Trials::kOneHostKeep * 1.1, 1.58 / 0.60 - 1}) {
    Trials trials;  // the default rounds
    const int rounds = Trials::kOneHostRounds;
    const Trials::Visit visit = Trials::kOneHostVisit;
    std::vector<const Algorithm*> ran;
    for (size_t call = 0;; ++call) {
      const Algorithm* a = trials.choose(Collective::AllReduce, 1 << 20, g);
      ASSERT_NE(a, nullptr) << "call " << call;
      EXPECT_EQ(trials.timing(), call % visit.calls >= visit.calls - visit.timed) << "call " << call;
      ran.push_back(a);
      // The last candidate in the registry's order is the fastest.
      if (trials.record(std::string(a->name) == "shm_cma" ? 1e-3 : 1e-3 * (1 + beaten_by))) break;
      ASSERT_LT(call, Trials::most_calls(Trials::kDefaultRounds, rounds));
    }
    std::vector<const Algorithm*> candidates;  // in the order of their first visits
    for (const Algorithm* a : ran)
      if (std::find(candidates.begin(), candidates.end(), a) == candidates.end()) candidates.push_back(a);
    ASSERT_EQ(candidates.size(), 3u) << "shm_flat, shm_rs_ag and shm_cma";
    EXPECT_EQ(candidates[0], table) << "the table's choice comes first";
    for (const Algorithm* a : candidates) EXPECT_TRUE(a->needs & kNeedShm) << a->name;
    EXPECT_EQ(ran.size(), static_cast<size_t>(rounds) * 3 * visit.calls);
    for (size_t v = 0; v < ran.size() / visit.calls; ++v)  // visits of kOneHostVisit.calls, rotating
      EXPECT_EQ(ran[v * visit.calls], candidates[(v % 3 + v / 3) % 3]) << "visit " << v;
    const std::vector<double> medians = trials.exchanged();
    ASSERT_EQ(medians.size(), 3u);
    const std::string line = trials.settle(medians, g);
    EXPECT_NE(line.find("trials of all_reduce at 1 MiB-2 MiB on one host (4 ranks), the slowest rank's median of " +
                        std::to_string(rounds * visit.timed) + " calls:"),  // single calls on one host
              std::string::npos)
        << line;
    EXPECT_EQ(line.find("priced"), std::string::npos) << line;
    const bool kept = std::string(table->name) == "shm_cma" || beaten_by < Trials::kOneHostKeep;
    EXPECT_EQ(line.find("(the table's choice)") != std::string::npos, kept) << line;
    EXPECT_EQ(std::string(trials.choose(Collective::AllReduce, 1 << 20, g)->name), kept ? table->name : "shm_cma")
        << line;
    EXPECT_FALSE(trials.timing());
  }
}

TEST(Trials, OneHostDecidesNothingBelowSixteenKiBOrWithoutAChoice) {
  Trials trials(3);
  EXPECT_EQ(trials.choose(Collective::AllReduce, Trials::kOneHostFrom - 1, one_host(4)), nullptr);
  EXPECT_EQ(trials.choose(Collective::AllToAll, kUnevenSplits, one_host(4)), nullptr);
  EXPECT_EQ(trials.choose(Collective::AllReduce, 1 << 20, one_host(1)), nullptr);  // alone
  Trials across_hosts_only(Trials::Rounds{3, 0});
  EXPECT_EQ(across_hosts_only.choose(Collective::AllReduce, 1 << 20, one_host(4)), nullptr);
  GroupTraits no_segment = one_host(4);  // SPMD_SHM=0: the TCP algorithms, by the table
  no_segment.shm = no_segment.cma = false;
  EXPECT_EQ(trials.choose(Collective::AllReduce, 1 << 20, no_segment), nullptr);
  GroupTraits no_cma = one_host(4);  // CMA forbidden: shm_flat and shm_rs_ag only
  no_cma.cma = false;
  const Algorithm* a = trials.choose(Collective::Broadcast, 1 << 20, no_cma);
  EXPECT_EQ(a, nullptr) << "broadcast has one shared-memory algorithm without CMA, not " << a->name;
  {
    set_algorithm_override("all_reduce=shm_flat");
    EXPECT_EQ(trials.choose(Collective::AllReduce, 1 << 20, one_host(4)), nullptr);
    set_algorithm_override("");
  }
  GroupTraits deterministic = one_host(4);  // only algorithms that reduce in rank order
  deterministic.deterministic = true;
  for (size_t call = 0; call < 3 * 3 * Trials::kOneHostVisit.calls; ++call)
    if (const Algorithm* tried = trials.choose(Collective::AllReduce, 1 << 20, deterministic)) {
      EXPECT_TRUE(applicable(*tried, deterministic)) << tried->name;
      trials.record(1e-3);
    }
}

TEST(Trials, DecideNothingWhereTheyShouldNot) {
  NetGuard links(kLinks);
  Trials trials(3);
  {
    set_algorithm_override("all_to_all=pairwise");  // SPMD_ALGO reaches uneven calls too
    EXPECT_EQ(trials.choose(Collective::AllToAll, kUnevenSplits, hosts(3, 2)), nullptr);
    set_algorithm_override("");
  }
  {
    set_algorithm_override("all_reduce=ring:0-100K");  // SPMD_ALGO names one
    EXPECT_EQ(trials.choose(Collective::AllReduce, 64 << 10, hosts(3, 2)), nullptr);
    set_algorithm_override("");
  }
  Trials off(0);  // SPMD_TRIALS=0
  EXPECT_EQ(off.choose(Collective::AllReduce, 64 << 10, hosts(3, 2)), nullptr);
  // Priced beyond kMaxTrialSeconds: not tried.
  NetGuard slow("net=10Mbit@2ms");
  EXPECT_EQ(trials.choose(Collective::AllReduce, 64 << 20, hosts(3, 2)), nullptr);
  EXPECT_FALSE(trials.timing());
  EXPECT_FALSE(trials.record(1.0));  // nothing timed: nothing recorded
}

TEST(Trials, SpmdTrialsSetsTheRounds) {
  ::unsetenv("SPMD_TRIALS");
  EXPECT_EQ(Trials::rounds_from_env().across_hosts, Trials::kDefaultRounds);
  EXPECT_EQ(Trials::rounds_from_env().one_host, Trials::kOneHostRounds);
  ::setenv("SPMD_TRIALS", "0", 1);
  EXPECT_EQ(Trials::rounds_from_env().across_hosts, 0);
  EXPECT_EQ(Trials::rounds_from_env().one_host, 0);
  ::setenv("SPMD_TRIALS", "2", 1);  // both
  EXPECT_EQ(Trials::rounds_from_env().across_hosts, 2);
  EXPECT_EQ(Trials::rounds_from_env().one_host, 2);
  ::setenv("SPMD_TRIALS", "-1", 1);
  EXPECT_THROW(Trials::rounds_from_env(), Error);
  ::setenv("SPMD_TRIALS", "three", 1);
  EXPECT_THROW(Trials::rounds_from_env(), Error);
  ::unsetenv("SPMD_TRIALS");
}

}  // namespace
}  // namespace spmd::algo
