// The collective conformance checks (tests/unit/collectives/conformance_checks.hpp) as real
// processes over the mpi backend: every process of `mpirun -np P` (or of spmdrun, where the
// backend joins MPI singletons) runs this binary; the world comes from spmd::init() with
// SPMD_BACKEND=mpi. Also subgroups, point to point, async overlap and call mismatches.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>

#include "../../unit/collectives/conformance_checks.hpp"
#include "spmd/spmd.hpp"

namespace spmd::test {
namespace {

ProcessGroup& w() { return world(); }

TEST(MpiConformance, BackendIsMpi) {
  EXPECT_EQ(w().backend_name(), "mpi");
  EXPECT_EQ(w().backend_name(Device::cuda(0)), "");
  std::vector<float> v(4);
  try {
    w().all_reduce(TensorView(v.data(), v.size(), DType::F32, Device::cuda(0)));
    ADD_FAILURE() << "a CUDA view was taken by the mpi backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("the mpi backend works on CPU memory"), std::string::npos) << e.what();
  }
}

TEST(MpiConformance, AllReduce) { check(Collective::AllReduce, w(), w().size()); }
TEST(MpiConformance, Reduce) { check(Collective::Reduce, w(), w().size()); }
TEST(MpiConformance, Broadcast) { check(Collective::Broadcast, w(), w().size()); }
TEST(MpiConformance, AllGather) { check(Collective::AllGather, w(), w().size()); }
TEST(MpiConformance, Gather) { check(Collective::Gather, w(), w().size()); }
TEST(MpiConformance, Scatter) { check(Collective::Scatter, w(), w().size()); }
TEST(MpiConformance, ReduceScatter) { check(Collective::ReduceScatter, w(), w().size()); }
TEST(MpiConformance, AllToAllEvenAndUneven) { check(Collective::AllToAll, w(), w().size()); }
TEST(MpiConformance, Barrier) { check(Collective::Barrier, w(), w().size()); }

// List forms whose buffers are not one block take the staging path.
TEST(MpiConformance, ListFormsWithSeparateBuffers) {
  const int p = w().size(), me = w().rank();
  for (size_t n : {size_t(3), size_t(5000)}) {
    std::vector<std::vector<int32_t>> outs(static_cast<size_t>(p), std::vector<int32_t>(n, -1));
    std::vector<TensorView> views;
    for (auto& o : outs) views.emplace_back(o);
    std::vector<int32_t> in(n, me * 10);
    w().all_gather(views, in);
    for (int r = 0; r < p; ++r) EXPECT_EQ(outs[static_cast<size_t>(r)][n - 1], r * 10) << "all_gather n=" << n;
    std::vector<std::vector<int32_t>> ins(static_cast<size_t>(p), std::vector<int32_t>(n));
    std::vector<TensorView> in_views;
    for (int r = 0; r < p; ++r) {
      std::fill(ins[static_cast<size_t>(r)].begin(), ins[static_cast<size_t>(r)].end(), r + me);
      in_views.emplace_back(ins[static_cast<size_t>(r)]);
    }
    std::vector<int32_t> out(n);
    w().reduce_scatter(out, in_views);
    EXPECT_EQ(out[0], p * me + p * (p - 1) / 2) << "reduce_scatter n=" << n;
  }
}

TEST(MpiConformance, SubgroupsAndTheirOwnCommunicators) {
  const int p = w().size();
  std::vector<int> evens;
  for (int r = 0; r < p; r += 2) evens.push_back(r);
  auto sub = w().new_group(evens);  // the parent's backend: mpi
  if (w().rank() % 2 == 0) {
    ASSERT_TRUE(sub);
    EXPECT_EQ(sub->backend_name(), "mpi");
    check(Collective::AllReduce, *sub, sub->size());  // (the checks' roots are world ranks: none here)
    std::vector<int32_t> b(5000, w().rank());
    sub->broadcast(b, evens.back());
    EXPECT_EQ(b[4999], evens.back());
  } else {
    EXPECT_FALSE(sub);
  }
  auto reversed = w().new_subgroups_by_enumeration({[&] {
    std::vector<int> all;
    for (int r = p - 1; r >= 0; --r) all.push_back(r);
    return all;
  }()});
  ASSERT_TRUE(reversed);
  std::vector<int64_t> v(1, w().rank());
  reversed->all_reduce(v, ReduceOp::Max);
  EXPECT_EQ(v[0], p - 1);
  w().barrier();
}

TEST(MpiConformance, PointToPointAndAnySource) {
  const int p = w().size(), me = w().rank();
  if (p < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<double> buf(1000, me);
  std::vector<double> got(1000, -1);
  // A ring through batch_isend_irecv (every rank sends and receives at once).
  auto works = w().batch_isend_irecv({{P2POp::Send, buf, (me + 1) % p, 3}, {P2POp::Recv, got, (me + p - 1) % p, 3}});
  for (auto& wk : works) wk.wait();
  EXPECT_EQ(got[999], (me + p - 1) % p);
  // Every other rank sends to rank 0, which receives from any source and learns who sent.
  if (me == 0) {
    std::vector<int> seen;
    for (int k = 1; k < p; ++k) {
      std::vector<int32_t> one(2, -1);
      int src = w().recv(one, -1, 9);
      EXPECT_EQ(one[0], src * 100);
      seen.push_back(src);
    }
    std::sort(seen.begin(), seen.end());
    for (int k = 1; k < p; ++k) EXPECT_EQ(seen[static_cast<size_t>(k - 1)], k);
  } else {
    std::vector<int32_t> one(2, me * 100);
    w().send(one, 0, 9);
  }
  // A message longer than the receive is a Mismatch, not garbage (it fails the receiver's
  // group, so on a pair of its own).
  auto pair = w().new_group({0, 1});
  if (me == 0) {
    std::vector<int32_t> small(2);
    try {
      pair->recv(small, 1, 11);
      ADD_FAILURE() << "a 5-element message fit a 2-element recv";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Mismatch) << e.what();
      EXPECT_NE(std::string(e.what()).find("recv(i32, 2, tag 11) from rank 1"), std::string::npos) << e.what();
    }
  } else if (me == 1) {
    std::vector<int32_t> five(5, 1);
    pair->send(five, 0, 11);
  }
  w().barrier();
}

TEST(MpiConformance, AsyncWorksOverlapTheCaller) {
  std::vector<std::vector<float>> bufs(4, std::vector<float>(100000, 1.0f));
  std::vector<Work> works;
  for (auto& b : bufs) works.push_back(w().all_reduce_async(b));
  for (auto& wk : works) wk.wait();
  for (auto& b : bufs) EXPECT_EQ(b[12345], static_cast<float>(w().size()));
}

// Ranks that make different calls all raise Mismatch naming each call, on a group of their own
// (the failed group is unusable; the world goes on).
TEST(MpiConformance, DifferentCallsRaiseMismatchOnEveryRank) {
  const int p = w().size();
  if (p < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<int> all(static_cast<size_t>(p));
  std::iota(all.begin(), all.end(), 0);
  for (size_t n : {size_t(2), size_t(10000)}) {  // folded into the check, and not
    auto g = w().new_group(all);
    std::vector<float> v(n, 1.0f);
    std::string what;
    try {
      if (w().rank() == 0) g->all_reduce(v);
      else g->broadcast(v, 1);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Mismatch) << e.what();
      what = e.what();
    }
    EXPECT_NE(what.find("rank 0 called all_reduce(f32, " + std::to_string(n) + ", Sum)"), std::string::npos) << what;
    EXPECT_NE(what.find("called broadcast(f32, " + std::to_string(n) + ", root 1)"), std::string::npos) << what;
    // Later calls on the failed group raise the same error at once.
    try {
      g->barrier();
      ADD_FAILURE() << "the failed group took another call";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::Mismatch);
    }
  }
  w().barrier();
}

}  // namespace
}  // namespace spmd::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  spmd::init();  // the backend from SPMD_BACKEND (the test sets mpi)
  int status = RUN_ALL_TESTS();
  spmd::destroy();
  return status;
}
