// The mpi backend's call check records (backends/mpi/mpi_check.hpp), combined the way MPI
// combines them: agreement is seen by every rank, folded payloads are reduced or merged only
// while the ranks agree, and a disagreement names every rank's call.
#include <gtest/gtest.h>

#include <cstring>

#include "backends/mpi/mpi_check.hpp"

namespace spmd::test {
namespace {

using mpi::CheckRecord;

// What an MPI_Allreduce of the records gives: combined in some order (here left to right).
CheckRecord combine_all(std::vector<CheckRecord> rs) {
  for (size_t i = 1; i < rs.size(); ++i) mpi::combine_records(&rs[i - 1], &rs[i], 1);
  return rs.back();
}

CallSignature all_reduce_sig(uint64_t count) { return {Collective::AllReduce, DType::F32, ReduceOp::Sum, -1, count}; }

TEST(MpiCheck, SameCallsAgreeAndTheirFoldedValuesAreReduced) {
  std::vector<CheckRecord> rs;
  for (int r = 0; r < 3; ++r) {
    CheckRecord rec = mpi::make_record(all_reduce_sig(2), 7);
    rec.kind = static_cast<uint8_t>(mpi::Fold::Reduce);
    rec.dtype = static_cast<uint8_t>(DType::F32);
    rec.op = static_cast<uint8_t>(ReduceOp::Sum);
    rec.count = 2;
    float v[2] = {float(r + 1), 10.0f};
    std::memcpy(rec.payload, v, sizeof v);
    rs.push_back(rec);
  }
  CheckRecord out = combine_all(rs);
  EXPECT_TRUE(mpi::all_agree(out));
  float v[2];
  std::memcpy(v, out.payload, sizeof v);
  EXPECT_EQ(v[0], 6.0f);
  EXPECT_EQ(v[1], 30.0f);
}

TEST(MpiCheck, MergedBytesComeFromEveryRank) {
  std::vector<CheckRecord> rs;
  for (int r = 0; r < 4; ++r) {
    CheckRecord rec = mpi::make_record({Collective::AllGather, DType::U8, ReduceOp::Sum, -1, 2}, 1);
    rec.kind = static_cast<uint8_t>(mpi::Fold::Merge);
    rec.count = 8;
    rec.payload[2 * r] = static_cast<unsigned char>(0x10 + r);
    rec.payload[2 * r + 1] = static_cast<unsigned char>(0x20 + r);
    rs.push_back(rec);
  }
  CheckRecord out = combine_all(rs);
  ASSERT_TRUE(mpi::all_agree(out));
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(out.payload[2 * r], 0x10 + r);
    EXPECT_EQ(out.payload[2 * r + 1], 0x20 + r);
  }
}

TEST(MpiCheck, AnyDifferenceIsSeenWhateverTheOrder) {
  const CallSignature a = all_reduce_sig(1024);
  const CallSignature b{Collective::Broadcast, DType::F32, ReduceOp::Sum, 0, 1024};
  EXPECT_NE(mpi::call_hash(a, 3), mpi::call_hash(b, 3));
  EXPECT_NE(mpi::call_hash(a, 3), mpi::call_hash(a, 4));  // the call number counts
  EXPECT_NE(mpi::call_hash(a, 3), mpi::call_hash(all_reduce_sig(1023), 3));
  for (int odd = 0; odd < 3; ++odd) {
    std::vector<CheckRecord> rs;
    for (int r = 0; r < 3; ++r) {
      CheckRecord rec = mpi::make_record(r == odd ? b : a, 3);
      rec.kind = static_cast<uint8_t>(mpi::Fold::Reduce);
      rec.dtype = static_cast<uint8_t>(DType::F32);
      rec.count = 1;
      rs.push_back(rec);
    }
    EXPECT_FALSE(mpi::all_agree(combine_all(rs))) << "odd rank " << odd;
  }
}

TEST(MpiCheck, ADisagreementNamesEveryCall) {
  std::vector<mpi::CallStamp> stamps = {{all_reduce_sig(8), 5},
                                        {{Collective::Broadcast, DType::F32, ReduceOp::Sum, 1, 8}, 5},
                                        {all_reduce_sig(8), 5}};
  EXPECT_EQ(mpi::describe_disagreement(stamps, {0, 4, 6}),
            "ranks 0,6 called all_reduce(f32, 8, Sum) (call #5), rank 4 called broadcast(f32, 8, root 1) (call #5)");
}

}  // namespace
}  // namespace spmd::test
