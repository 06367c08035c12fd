// The conformance suite: every algorithm in the registry (collectives/registry.cpp), forced
// through SPMD_ALGO's grammar, checked against the references for every dtype and op, odd sizes
// (including sizes that take several rounds of the shared-memory slots) and world sizes 1-8 —
// on one host, and on several faked hosts (SPMD_HOST_ID per rank) where the algorithm can run
// there. A new algorithm is tested by adding its registry row.
#include <map>

#include "collectives/select.hpp"
#include "core/locality.hpp"
#include "reference.hpp"

namespace spmd::test {
namespace {

using algo::Algorithm;

// A size that crosses the shared-memory slot (256 KiB) in f32, with ragged slices.
constexpr size_t kRounds = 100003;

double tag_of(int rank, size_t i) { return static_cast<double>((rank * 31 + static_cast<int>(i % 89)) % 100); }

#ifdef SPMD_CONFORMANCE_QUICK
// The sanitizer builds run a quick pass: fewer worlds, sizes and dtypes, every algorithm.
const std::vector<int> kOneHostWorlds = {1, 2, 3};
const std::vector<int> kFakedWorlds = {2, 3};
std::vector<size_t> sizes_for(int) { return {0, 7, 1000, kRounds}; }
std::vector<DType> dtypes_for(size_t) { return {DType::F32, DType::BF16, DType::I32}; }
#else
const std::vector<int> kOneHostWorlds = {1, 2, 3, 4, 5, 6, 7, 8};
const std::vector<int> kFakedWorlds = {2, 3, 4, 5, 6, 7, 8};
std::vector<size_t> sizes_for(int world) {
  std::vector<size_t> s = {0, 1, 7, 1000};
  if (world == 2 || world == 3 || world == 5) s.push_back(kRounds);
  return s;
}
std::vector<DType> dtypes_for(size_t n) {
  if (n == kRounds) return {DType::F32, DType::BF16};
  return std::vector<DType>(std::begin(kAllDTypes), std::end(kAllDTypes));
}
#endif

void check_all_reduce(ProcessGroup& g, int world) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n))
      for (ReduceOp op : ops_for(t)) {
        Buffer b(t, n);
        for (size_t i = 0; i < n; ++i) b.set(i, reduce_input(op, g.rank(), i));
        g.all_reduce(b.view(), op);
        std::vector<double> ref(13);
        for (size_t k = 0; k < 13; ++k) ref[k] = reference_reduce(t, op, world, k);
        expect_elements(b, n, [&](size_t i) { return ref[i % 13]; },
                        std::string("all_reduce ") + reduce_op_name(op) + " " + label(t, n, world));
      }
}

void check_reduce(ProcessGroup& g, int world) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n))
      for (ReduceOp op : ops_for(t))
        for (int root : {0, world - 1}) {
          Buffer b(t, n);
          for (size_t i = 0; i < n; ++i) b.set(i, reduce_input(op, g.rank(), i));
          g.reduce(b.view(), root, op);
          std::string what = std::string("reduce ") + reduce_op_name(op) + " root " + std::to_string(root) + " " + label(t, n, world);
          if (g.rank() == root)
            expect_elements(b, n, [&](size_t i) { return reference_reduce(t, op, world, i % 13); }, what);
          else
            expect_elements(b, n, [&](size_t i) { return b.round_trip(reduce_input(op, g.rank(), i)); }, what + " (input kept)");
        }
}

void check_broadcast(ProcessGroup& g, int world) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n))
      for (int root : {0, world / 2, world - 1}) {
        Buffer b(t, n);
        for (size_t i = 0; i < n; ++i) b.set(i, g.rank() == root ? tag_of(root, i) : -1);
        g.broadcast(b.view(), root);
        expect_elements(b, n, [&](size_t i) { return tag_of(root, i); },
                        "broadcast root " + std::to_string(root) + " " + label(t, n, world));
      }
}

void check_all_gather(ProcessGroup& g, int world) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n)) {
      Buffer in(t, n), into(t, n * static_cast<size_t>(world));
      for (size_t i = 0; i < n; ++i) in.set(i, tag_of(g.rank(), i));
      g.all_gather_into(into.view(), in.view());
      expect_elements(into, into.count(), [&](size_t i) { return tag_of(static_cast<int>(i / n), i % n); },
                      "all_gather " + label(t, n, world));
    }
}

void check_gather_scatter(ProcessGroup& g, int world, bool gather) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n))
      for (int root : {0, world - 1}) {
        std::vector<Buffer> blocks;
        std::vector<TensorView> views;
        for (int r = 0; r < world; ++r) blocks.emplace_back(t, n);
        for (auto& b : blocks) views.push_back(b.view());
        const bool is_root = g.rank() == root;
        std::string what = std::string(gather ? "gather" : "scatter") + " root " + std::to_string(root) + " " + label(t, n, world);
        if (gather) {
          Buffer in(t, n);
          for (size_t i = 0; i < n; ++i) in.set(i, tag_of(g.rank(), i));
          g.gather(in.view(), is_root ? views : std::vector<TensorView>{}, root);
          if (is_root)
            for (int r = 0; r < world; ++r)
              expect_elements(blocks[static_cast<size_t>(r)], n, [&](size_t i) { return tag_of(r, i); }, what);
        } else {
          if (is_root)
            for (int r = 0; r < world; ++r)
              for (size_t i = 0; i < n; ++i) blocks[static_cast<size_t>(r)].set(i, tag_of(r + 50, i));
          Buffer out(t, n);
          g.scatter(out.view(), is_root ? views : std::vector<TensorView>{}, root);
          expect_elements(out, n, [&](size_t i) { return tag_of(g.rank() + 50, i); }, what);
        }
      }
}

void check_reduce_scatter(ProcessGroup& g, int world) {
  for (size_t n : sizes_for(world))
    for (DType t : dtypes_for(n))
      for (ReduceOp op : ops_for(t)) {
        Buffer in(t, n * static_cast<size_t>(world)), out(t, n);
        for (size_t i = 0; i < in.count(); ++i) in.set(i, reduce_input(op, g.rank(), i));
        g.reduce_scatter_from(out.view(), in.view(), op);
        expect_elements(out, n, [&](size_t i) {
          return reference_reduce(t, op, world, (static_cast<size_t>(g.rank()) * n + i) % 13);
        }, std::string("reduce_scatter ") + reduce_op_name(op) + " " + label(t, n, world));
      }
}

void check_all_to_all(ProcessGroup& g, int world, bool uneven_only_if_fits) {
  const auto p = static_cast<size_t>(world), me = static_cast<size_t>(g.rank());
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(300)})
    for (DType t : kAllDTypes) {
      Buffer in(t, n * p), out(t, n * p);
      for (size_t j = 0; j < p; ++j)
        for (size_t i = 0; i < n; ++i) in.set(j * n + i, tag_of(g.rank() * 8 + static_cast<int>(j), i));
      g.all_to_all(out.view(), in.view());
      expect_elements(out, out.count(), [&](size_t k) { return tag_of(static_cast<int>(k / n) * 8 + g.rank(), k % n); },
                      "all_to_all " + label(t, n, world));
    }
  (void)uneven_only_if_fits;
  auto count = [](size_t from, size_t to) { return (from + to) % 3 + to; };
  std::vector<size_t> in_splits, out_splits;
  size_t in_total = 0, out_total = 0;
  for (size_t j = 0; j < p; ++j) {
    in_splits.push_back(count(me, j));
    out_splits.push_back(count(j, me));
    in_total += in_splits.back();
    out_total += out_splits.back();
  }
  Buffer in(DType::I32, in_total), out(DType::I32, out_total);
  size_t k = 0;
  for (size_t j = 0; j < p; ++j)
    for (size_t i = 0; i < in_splits[j]; ++i) in.set(k++, tag_of(g.rank() * 8 + static_cast<int>(j), i));
  g.all_to_all(out.view(), in.view(), out_splits, in_splits);
  k = 0;
  for (size_t j = 0; j < p; ++j)
    for (size_t i = 0; i < out_splits[j]; ++i, ++k)
      EXPECT_EQ(out.get(k), tag_of(static_cast<int>(j) * 8 + g.rank(), i)) << "uneven all_to_all from " << j;
}

void check(Collective c, ProcessGroup& g, int world) {
  switch (c) {
    case Collective::AllReduce: return check_all_reduce(g, world);
    case Collective::Reduce: return check_reduce(g, world);
    case Collective::Broadcast: return check_broadcast(g, world);
    case Collective::AllGather: return check_all_gather(g, world);
    case Collective::Gather: return check_gather_scatter(g, world, true);
    case Collective::Scatter: return check_gather_scatter(g, world, false);
    case Collective::ReduceScatter: return check_reduce_scatter(g, world);
    case Collective::AllToAll: return check_all_to_all(g, world, true);
    case Collective::Barrier:
      for (int i = 0; i < 10; ++i) g.barrier();
      return;
    default: FAIL() << "no check for " << collective_name(c);
  }
}

// Ranks on faked hosts: rank r on host r % hosts (members of a host are not contiguous).
struct FakeHosts {
  explicit FakeHosts(int hosts) {
    set_host_identity_override([hosts](int r) { return "fake-host-" + std::to_string(r % hosts); });
  }
  ~FakeHosts() { set_host_identity_override(nullptr); }
};

struct AlgoOverride {
  explicit AlgoOverride(const std::string& spec) { algo::set_algorithm_override(spec); }
  ~AlgoOverride() { algo::set_algorithm_override(""); }
};

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
