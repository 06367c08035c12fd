// Selection: the default tables and SPMD_ALGO's grammar, byte ranges and group sizes (@).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "collectives/select.hpp"
#include "select_helpers.hpp"
#include "spmd/error.hpp"

namespace spmd::algo {
namespace {

// A table spmd-tune wrote on this machine would move the defaults these tests check (ctest
// sets SPMD_TUNING=off too; this holds when the binary is run by hand).
[[maybe_unused]] const bool kBuiltInTablesOnly = (::setenv("SPMD_TUNING", "off", 1), true);

using select_testing::one_host;
using select_testing::pick;

struct OverrideGuard {
  explicit OverrideGuard(const std::string& spec) { set_algorithm_override(spec); }
  ~OverrideGuard() { set_algorithm_override(""); }
};

TEST(Select, TheChoiceCacheFollowsSizesAndSettings) {
  ChoiceCache cache;
  const GroupTraits g = one_host(2);
  EXPECT_STREQ(cache.choose(Collective::AllReduce, 8, g).name, "shm_flat");
  EXPECT_STREQ(cache.choose(Collective::AllReduce, 8, g).name, "shm_flat");  // remembered
  EXPECT_STREQ(cache.choose(Collective::Broadcast, 1 << 20, g).name, "shm_cma");  // per collective
  EXPECT_STREQ(cache.choose(Collective::AllReduce, 256 << 10, g).name, "shm_cma");  // another size
  {
    OverrideGuard ring("all_reduce=ring");  // new settings: chosen anew
    EXPECT_STREQ(cache.choose(Collective::AllReduce, 256 << 10, g).name, "ring");
    EXPECT_STREQ(cache.choose(Collective::Broadcast, 1 << 20, g).name, "shm_cma");
  }
  EXPECT_STREQ(cache.choose(Collective::AllReduce, 256 << 10, g).name, "shm_cma");
}

TEST(Select, DefaultsDependOnGroupSize) {
  // Single copy pays for a broadcast from 32 KiB between two ranks, not among four.
  EXPECT_EQ(pick(Collective::Broadcast, 1 << 20, one_host(2)), "shm_cma");
  EXPECT_EQ(pick(Collective::Broadcast, 64 << 20, one_host(2)), "shm_cma");
  EXPECT_EQ(pick(Collective::Broadcast, 16 << 10, one_host(2)), "shm_flat");
  EXPECT_EQ(pick(Collective::Broadcast, 1 << 20, one_host(4)), "shm_flat");
  EXPECT_EQ(pick(Collective::Broadcast, 256 << 10, one_host(4)), "shm_flat");
  EXPECT_EQ(pick(Collective::Broadcast, 16 << 20, one_host(4)), "shm_cma");
  EXPECT_EQ(pick(Collective::AllReduce, 256 << 10, one_host(2)), "shm_cma");
  EXPECT_EQ(pick(Collective::AllReduce, 256 << 10, one_host(4)), "shm_rs_ag");
  EXPECT_EQ(pick(Collective::AllReduce, 8, one_host(2)), "shm_flat");
  EXPECT_EQ(pick(Collective::AllReduce, 8 << 10, one_host(2)), "shm_flat");
  EXPECT_EQ(pick(Collective::AllReduce, 16 << 20, one_host(2)), "shm_cma");
  EXPECT_EQ(pick(Collective::AllReduce, 8 << 10, one_host(4)), "shm_rs_ag");
  EXPECT_EQ(pick(Collective::AllReduce, 16 << 20, one_host(4)), "shm_cma");
  EXPECT_EQ(pick(Collective::ReduceScatter, 64 << 10, one_host(2)), "shm_cma");
  EXPECT_EQ(pick(Collective::ReduceScatter, 16 << 10, one_host(2)), "shm_flat");
  EXPECT_EQ(pick(Collective::ReduceScatter, 64 << 10, one_host(4)), "shm_flat");
  EXPECT_EQ(pick(Collective::ReduceScatter, 16 << 20, one_host(4)), "shm_cma");
  EXPECT_EQ(pick(Collective::AllGather, 16 << 10, one_host(2)), "shm_cma");
  EXPECT_EQ(pick(Collective::AllGather, 8 << 10, one_host(2)), "shm_flat");
  EXPECT_EQ(pick(Collective::AllGather, 16 << 10, one_host(4)), "shm_flat");
  EXPECT_EQ(pick(Collective::AllGather, 32 << 10, one_host(4)), "shm_cma");
  // Without single copy the @2 entries do not apply and the next one that can run wins.
  GroupTraits no_cma = one_host(2);
  no_cma.cma = false;
  EXPECT_EQ(pick(Collective::Broadcast, 1 << 20, no_cma), "shm_flat");
  EXPECT_EQ(pick(Collective::AllReduce, 256 << 10, no_cma), "shm_rs_ag");
}

TEST(Select, OverrideWithGroupSizes) {
  OverrideGuard o("all_reduce=shm_cma:1K-@2,shm_flat@3-4,shm_rs_ag@5-");
  EXPECT_EQ(pick(Collective::AllReduce, 4096, one_host(2)), "shm_cma");
  EXPECT_EQ(pick(Collective::AllReduce, 8, one_host(2)), "shm_flat");  // below 1K: the default
  EXPECT_EQ(pick(Collective::AllReduce, 4096, one_host(3)), "shm_flat");
  EXPECT_EQ(pick(Collective::AllReduce, 4096, one_host(4)), "shm_flat");
  EXPECT_EQ(pick(Collective::AllReduce, 4096, one_host(7)), "shm_rs_ag");
}

TEST(Select, BadGroupSizesAreClearErrors) {
  for (const char* spec : {"all_reduce=ring@0", "all_reduce=ring@x", "all_reduce=ring@4-2", "all_reduce=ring:1K-@"}) {
    try {
      set_algorithm_override(spec);
      set_algorithm_override("");
      ADD_FAILURE() << spec << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << spec;
      EXPECT_NE(std::string(e.what()).find("@ranks"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace spmd::algo
