// all_reduce: every algorithm x dtype x op x size x world size against the reference.
#include "collectives/select.hpp"
#include "reference.hpp"

namespace spmd::test {
namespace {

constexpr size_t kBig = (size_t(1) << 20) + 3;  // 1 Mi + 3 elements: ragged segments

struct AlgoGuard {
  explicit AlgoGuard(const std::string& spec) { algo::set_algorithm_override(spec); }
  ~AlgoGuard() { algo::set_algorithm_override(""); }
};

// One world runs every (dtype, op, size) in sequence: the connections are made once.
void check_all_reduce(int world, const std::vector<size_t>& sizes, const std::vector<DType>& dtypes) {
  run_ranks(world, [&](ProcessGroup& g) {
    for (DType t : dtypes)
      for (ReduceOp op : ops_for(t))
        for (size_t n : sizes) {
          Buffer b(t, n);
          for (size_t i = 0; i < n; ++i) b.set(i, reduce_input(op, g.rank(), i));
          g.all_reduce(b.view(), op);
          // Inputs repeat with period 13 (value_at), so 13 reference values cover any size.
          std::vector<double> ref(13);
          for (size_t k = 0; k < ref.size(); ++k) ref[k] = reference_reduce(t, op, world, k);
          expect_elements(b, n, [&](size_t i) { return ref[i % 13]; },
                          "all_reduce " + std::string(reduce_op_name(op)) + " " + label(t, n, world));
        }
  });
}

class AllReduceAlgo : public ::testing::TestWithParam<std::string> {};

TEST_P(AllReduceAlgo, EveryDTypeOpAndSmallSize) {
  AlgoGuard guard(GetParam());
  for (int world = 1; world <= 8; ++world)
    check_all_reduce(world, {0, 1, 7, 1000}, std::vector<DType>(std::begin(kAllDTypes), std::end(kAllDTypes)));
}

TEST_P(AllReduceAlgo, LargeRaggedSizes) {
  AlgoGuard guard(GetParam());
  for (int world : {2, 3, 4, 5}) check_all_reduce(world, {kBig}, {DType::F32});
  check_all_reduce(3, {kBig}, {DType::BF16, DType::I64});
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AllReduceAlgo,
                         ::testing::Values("", "all_reduce=ring", "all_reduce=recursive_doubling",
                                           "all_reduce=halving_doubling", "all_reduce=direct"),
                         [](const auto& info) {
                           return info.param.empty() ? std::string("automatic") : info.param.substr(11);
                         });

TEST(AllReduce, BitwiseOnFloatIsInvalidArgument) {
  run_ranks(2, [](ProcessGroup& g) {
    for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
      for (ReduceOp op : {ReduceOp::BitAnd, ReduceOp::BitOr, ReduceOp::BitXor}) {
        Buffer b(t, 4);
        try {
          g.all_reduce(b.view(), op);
          ADD_FAILURE() << "no error for " << reduce_op_name(op) << " on " << dtype_name(t);
        } catch (const Error& e) {
          EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
          EXPECT_NE(std::string(e.what()).find(dtype_name(t)), std::string::npos) << e.what();
        }
      }
    // The group is still usable after argument errors.
    std::vector<int32_t> v(3, 1);
    g.all_reduce(v, ReduceOp::BitOr);
    EXPECT_EQ(v[0], 1);
  });
}

TEST(AllReduce, ResultsAreBitwiseIdenticalOnEveryRank) {
  // Inexact float sums: every rank must still hold the same bits (one rank computes each
  // element's final value, or the combination is commutative).
  for (const char* spec : {"all_reduce=ring", "all_reduce=recursive_doubling", "all_reduce=halving_doubling",
                           "all_reduce=direct"}) {
    AlgoGuard guard(spec);
    const int world = 5;
    std::vector<std::vector<float>> results(world);
    run_ranks(world, [&](ProcessGroup& g) {
      std::vector<float> v(10007);
      for (size_t i = 0; i < v.size(); ++i) v[i] = 1.0f / float(1 + i + 3 * size_t(g.rank()));
      g.all_reduce(v);
      results[static_cast<size_t>(g.rank())] = v;
    });
    for (int r = 1; r < world; ++r)
      EXPECT_EQ(std::memcmp(results[0].data(), results[static_cast<size_t>(r)].data(), results[0].size() * 4), 0)
          << spec << " rank " << r;
  }
}

}  // namespace
}  // namespace spmd::test
