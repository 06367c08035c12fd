// The conformance suite: every algorithm in the registry (collectives/registry.cpp), forced
// through SPMD_ALGO's grammar, checked against the references for every dtype and op, odd sizes
// (including sizes that take several rounds of the shared-memory slots) and world sizes 1-8 —
// on one host, and on several faked hosts (SPMD_HOST_ID per rank) where the algorithm can run
// there. A new algorithm is tested by adding its registry row.
#include <stdlib.h>

#include <map>
#include <numeric>

#include "collectives/cost_model.hpp"
#include "collectives/hier/hier_common.hpp"
#include "collectives/select.hpp"
#include "collectives/trials.hpp"
#include "call/locality.hpp"
#include "conformance_checks.hpp"
#include "faked_hosts.hpp"

namespace spmd::test {
namespace {

using algo::Algorithm;

// The smallest shared-memory slots (set before any group exists), so that kRounds takes
// several rounds of them: the round logic does not depend on the slot size.
const bool kSmallSlots = (::setenv("SPMD_SHM_SLOT_KB", "128", 0), true);

#ifdef SPMD_CONFORMANCE_QUICK
const std::vector<int> kOneHostWorlds = {1, 2, 3};
const std::vector<int> kFakedWorlds = {2, 3};
#else
const std::vector<int> kOneHostWorlds = {1, 2, 3, 4, 5, 6, 7, 8};
const std::vector<int> kFakedWorlds = {2, 3, 4, 5, 6, 7, 8};
#endif

std::string name_of(const Algorithm& a) { return std::string(collective_name(a.collective)) + "=" + a.name; }

class Conformance : public ::testing::TestWithParam<uint16_t> {};

TEST_P(Conformance, OneHost) {
  const Algorithm& a = algo::algorithm_by_id(GetParam());
  if (a.needs & algo::kNeedHosts) GTEST_SKIP() << name_of(a) << " needs several hosts";
  AlgoOverride force(name_of(a));
  for (int world : kOneHostWorlds) run_ranks(world, [&](ProcessGroup& g) { check(a.collective, g, world); });
}

TEST_P(Conformance, FakedHosts) {
  const Algorithm& a = algo::algorithm_by_id(GetParam());
  if (a.needs & algo::kNeedShm) GTEST_SKIP() << name_of(a) << " needs one host";
  AlgoOverride force(name_of(a));
  for (int hosts : {2, 3}) {
    FakeHosts fake(hosts);
    for (int world : kFakedWorlds) run_ranks(world, [&](ProcessGroup& g) { check(a.collective, g, world); });
  }
}

// hier all_gather's phase among leaders by Bruck's algorithm: 4 hosts of 2 ranks over links of
// 1 ms, where log2 4 = 2 steps beat the ring's 3 for small blocks (large ones keep the ring).
TEST(HierAllGather, BruckAmongTheLeaders) {
  Links links("net=1Gbit@1ms");
  ASSERT_EQ(algo::cheapest_among_hosts(Collective::AllGather, 2 * 7 * 8, 4, algo::net_model()), "bruck");
  {
    AlgoOverride force("all_gather=hier");
    FakeHosts fake(4);
    run_ranks(8, [&](ProcessGroup& g) { check(Collective::AllGather, g, 8); });
  }
}

// Trials (collectives/trials.hpp) switch algorithms between the first calls of a size class,
// then settle, by an exchange of their own among the ranks, on one for every rank: results
// stay right across the switches and after them (a rank that chose otherwise raises Mismatch).
// Links with slow shared memory, where the model prices flat algorithms and hier near.
TEST(TrialsInAGroup, SwitchAlgorithmsWithRightResults) {
  Links links("net=113MB@15us,host=3390MB@45us,shm=1100MB@22us,msg=22us");
  ASSERT_GE(algo::rank_by_model(Collective::AllReduce, 64 << 10, algo::GroupTraits{6, 3, 2, false, true}).size(), 2u);
  for (int hosts : {2, 3}) {
    FakeHosts fake(hosts);
    const int world = 2 * hosts;
    run_ranks(world, [&](ProcessGroup& g) {
      for (size_t n : {size_t{(64u << 10) / 4 + 3}, size_t{(300u << 10) / 4 + 1}})
        // More calls than the trials of a class take (rounds x candidates x a visit's calls), so
        // the ranks settle on one between calls and run it after.
        for (int call = 0; call < static_cast<int>(algo::Trials::most_calls(algo::Trials::kDefaultRounds, algo::Trials::kOneHostRounds)) + 4; ++call) {
          std::vector<float> v(n), block(n / 4 + 1), all(block.size() * static_cast<size_t>(world));
          for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(tag_of(g.rank() + call, i));
          for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<float>(tag_of(g.rank() * 7 + call, i));
          g.all_reduce(TensorView(v), ReduceOp::Sum);
          g.all_gather_into(TensorView(all), TensorView(block));
          size_t wrong = 0;
          for (size_t i = 0; i < n; ++i) {
            double sum = 0;
            for (int r = 0; r < world; ++r) sum += tag_of(r + call, i);
            wrong += v[i] != static_cast<float>(sum);
          }
          for (int r = 0; r < world; ++r)
            for (size_t i = 0; i < block.size(); ++i)
              wrong += all[static_cast<size_t>(r) * block.size() + i] != static_cast<float>(tag_of(r * 7 + call, i));
          ASSERT_EQ(wrong, 0u) << "rank " << g.rank() << ", call " << call << ", " << n << " elements on " << hosts << " hosts";
        }
    });
  }
}

// On one host the trials visit the shared-memory algorithms from 16 KiB (all_reduce's three,
// all_gather's two), then settle by their exchange on one for every rank: results stay right
// across the switches and after them.
TEST(TrialsInAGroup, OneHostSwitchesSharedMemoryAlgorithmsWithRightResults) {
  const int world = 4;
  const size_t calls = algo::Trials::most_calls(algo::Trials::kDefaultRounds, algo::Trials::kOneHostRounds) + 4;
  run_ranks(world, [&](ProcessGroup& g) {
    const size_t n = (algo::Trials::kOneHostFrom + 12) / 4, block = (70u << 10) / 4 + 1;
    for (size_t call = 0; call < calls; ++call) {
      std::vector<float> v(n), mine(block), all(block * static_cast<size_t>(world));
      for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(tag_of(g.rank() + static_cast<int>(call), i));
      for (size_t i = 0; i < block; ++i) mine[i] = static_cast<float>(tag_of(g.rank() * 7 + static_cast<int>(call), i));
      g.all_reduce(TensorView(v), ReduceOp::Sum);
      g.all_gather_into(TensorView(all), TensorView(mine));
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) {
        double sum = 0;
        for (int r = 0; r < world; ++r) sum += tag_of(r + static_cast<int>(call), i);
        wrong += v[i] != static_cast<float>(sum);
      }
      for (int r = 0; r < world; ++r)
        for (size_t i = 0; i < block; ++i)
          wrong += all[static_cast<size_t>(r) * block + i] != static_cast<float>(tag_of(r * 7 + static_cast<int>(call), i));
      ASSERT_EQ(wrong, 0u) << "rank " << g.rank() << ", call " << call;
    }
  });
}

// Uneven all_to_all is one class tried on its first calls; when what the ranks move grows 4x,
// a check among them (every kUnevenCheckCalls calls) tries it again: results stay right through
// the checks, the second trials and after, with every rank moving different sizes.
TEST(TrialsInAGroup, UnevenAllToAllTriedAgainWhenItsSizeGrows) {
  Links links("net=113MB@15us,host=3390MB@45us,shm=1100MB@22us,msg=22us");
  FakeHosts fake(3);
  const int world = 6;
  const size_t phase_calls = algo::Trials::most_calls(algo::Trials::kDefaultRounds, algo::Trials::kOneHostRounds) + algo::Trials::kUnevenCheckCalls + 4;
  run_ranks(world, [&](ProcessGroup& g) {
    const auto me = static_cast<size_t>(g.rank());
    for (size_t scale : {size_t{1}, size_t{64}})
      for (size_t call = 0; call < phase_calls; ++call) {
        auto count = [&](size_t from, size_t to) { return scale * (1 + (from + to) % 3); };
        std::vector<size_t> in_splits, out_splits;
        for (size_t j = 0; j < static_cast<size_t>(world); ++j) {
          in_splits.push_back(count(me, j));
          out_splits.push_back(count(j, me));
        }
        std::vector<float> in, out(std::accumulate(out_splits.begin(), out_splits.end(), size_t{0}), -1.0f);
        for (size_t j = 0; j < in_splits.size(); ++j)
          for (size_t i = 0; i < in_splits[j]; ++i) in.push_back(static_cast<float>(tag_of(int(me * 31 + j + call), i)));
        g.all_to_all(TensorView(out), TensorView(in), out_splits, in_splits);
        size_t wrong = 0, at = 0;
        for (size_t j = 0; j < out_splits.size(); ++j)
          for (size_t i = 0; i < out_splits[j]; ++i) wrong += out[at++] != static_cast<float>(tag_of(int(j * 31 + me + call), i));
        ASSERT_EQ(wrong, 0u) << "rank " << me << ", call " << call << " of scale " << scale;
      }
  });
}

std::vector<uint16_t> every_algorithm() {
  std::vector<uint16_t> ids;
  for (const Algorithm& a : algo::all_algorithms())
    if (a.collective != Collective::Send) ids.push_back(algo::algorithm_id(a));
  return ids;
}

INSTANTIATE_TEST_SUITE_P(Registry, Conformance, ::testing::ValuesIn(every_algorithm()), [](const auto& info) {
  const Algorithm& a = algo::algorithm_by_id(info.param);
  return std::string(collective_name(a.collective)) + "_" + a.name;
});

// Every algorithm that reduces gives every rank the same bits, even for float inputs whose
// sum depends on the order (very different magnitudes); in deterministic mode the bits are
// also the same whatever the algorithm and placement.
TEST(SameBits, EveryReducingAlgorithmAndDeterministicMode) {
  const int world = 5;
  auto input = [](int rank, size_t i) {
    return static_cast<float>((i % 3 == 0 ? 1e8 : 1.0) * (rank % 2 ? -1.0 : 1.0) / (1.0 + double(rank) + double(i % 7)));
  };
  std::map<std::string, std::vector<float>> det_results;
  for (const Algorithm& a : algo::all_algorithms()) {
    if (a.collective != Collective::AllReduce) continue;
    for (int hosts : {1, 2}) {
      if ((a.needs & algo::kNeedShm) && hosts > 1) continue;
      if ((a.needs & algo::kNeedHosts) && hosts == 1) continue;
      for (bool det : {false, true}) {
        if (det && !(a.needs & algo::kRankOrder)) continue;
        std::unique_ptr<FakeHosts> fake;
        if (hosts > 1) fake = std::make_unique<FakeHosts>(hosts);
        AlgoOverride force(name_of(a));
        GroupOptions o;
        o.deterministic = det;
        std::vector<std::vector<float>> results(world);
        run_ranks(world, [&](ProcessGroup& g) {
          std::vector<float> v(70001);
          for (size_t i = 0; i < v.size(); ++i) v[i] = input(g.rank(), i);
          g.all_reduce(v);
          results[static_cast<size_t>(g.rank())] = v;
        }, o);
        for (int r = 1; r < world; ++r)
          EXPECT_EQ(std::memcmp(results[0].data(), results[static_cast<size_t>(r)].data(), results[0].size() * 4), 0)
              << name_of(a) << " hosts " << hosts << ": rank " << r << " differs from rank 0";
        if (det) det_results[name_of(a) + " hosts " + std::to_string(hosts)] = results[0];
      }
    }
  }
  ASSERT_GE(det_results.size(), 2u);
  for (auto& [name, r] : det_results)
    EXPECT_EQ(std::memcmp(r.data(), det_results.begin()->second.data(), r.size() * 4), 0)
        << "deterministic " << name << " differs from " << det_results.begin()->first;
}

}  // namespace
}  // namespace spmd::test
