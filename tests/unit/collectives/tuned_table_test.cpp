// The machine's tuned selection table: its file (read, written, refused), the group sizes a
// line serves, select() following it on one host only, and spmd-tune's winners and ranges.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <string>

#include "collectives/select.hpp"
#include "select_helpers.hpp"
#include "collectives/tuned_table.hpp"
#include "spmd/error.hpp"
#include "winners.hpp"

namespace spmd::algo {
namespace {

using select_testing::one_host;
using select_testing::pick;

// A private folder for the table and SPMD_TUNING pointing into it for one test.
class TunedTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/spmd_tuned_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/sub/tuning.conf";
    ::setenv("SPMD_TUNING", path_.c_str(), 1);
  }
  void TearDown() override {
    ::setenv("SPMD_TUNING", "off", 1);
    set_algorithm_override("");
    std::system(("rm -rf " + dir_).c_str());
  }
  void write_text(const std::string& text) {
    std::system(("mkdir -p " + dir_ + "/sub").c_str());
    std::ofstream(path_) << text;
  }
  std::string dir_, path_;
};

TEST_F(TunedTableTest, WrittenThenReadBack) {
  TunedTable t{machine_key(), {{2, Collective::AllReduce, "shm_cma"}, {4, Collective::Broadcast, "shm_flat:0-1M,shm_cma:1M-"}}};
  write_tuned_table(path_, t, "line one\nline two");  // makes the missing folder
  std::optional<TunedTable> back = read_tuned_table(path_);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->machine, machine_key());
  ASSERT_EQ(back->lines.size(), 2u);
  EXPECT_EQ(back->lines[1].ranks, 4);
  EXPECT_EQ(back->lines[1].collective, Collective::Broadcast);
  EXPECT_EQ(back->lines[1].spec, "shm_flat:0-1M,shm_cma:1M-");
  EXPECT_FALSE(read_tuned_table(dir_ + "/none.conf"));  // no file: no table, no error
}

TEST_F(TunedTableTest, ABrokenFileIsRefusedNamingItsLine) {
  write_text("machine " + machine_key() + "\n2 all_reduce shm_cma\nfour all_reduce shm_flat\n");
  try {
    read_tuned_table(path_);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(path_ + ", line 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("spmd-tune"), std::string::npos) << e.what();
  }
  write_text("2 all_reduce shm_cma\n");
  EXPECT_THROW(read_tuned_table(path_), Error);  // no machine line
  write_text("machine " + machine_key() + "\n2 all_reduce shm_cma@2\n");
  EXPECT_THROW(read_tuned_table(path_), Error);  // group sizes belong to the line
  write_text("machine " + machine_key() + "\n2 all_reduce ring_of_fire\n");
  EXPECT_THROW(set_algorithm_override(""), Error);  // an algorithm all_reduce does not have
}

TEST(TunedTable, EachLineServesTheGroupSizesUpToIt) {
  const std::vector<int> measured = {2, 4, 8};
  EXPECT_EQ(tuned_rank_range(2, measured), std::make_pair(1, 2));
  EXPECT_EQ(tuned_rank_range(4, measured), std::make_pair(3, 4));
  EXPECT_EQ(tuned_rank_range(8, measured), std::make_pair(5, std::numeric_limits<int>::max()));
}

TEST_F(TunedTableTest, SelectionOnOneHostFollowsIt) {
  // Built in: shm_flat for 8 B at 2 and 4 ranks, shm_rs_ag at 4 ranks from 4 KiB.
  ASSERT_EQ(pick(Collective::AllReduce, 8, one_host(2)), "shm_flat");
  write_text("# measured elsewhere in time\nmachine " + machine_key() +
             "\n2 all_reduce shm_cma\n4 all_reduce shm_rs_ag:0-64K,shm_cma:64K-\n");
  set_algorithm_override("");  // the tables are made anew and read the file
  EXPECT_EQ(tuned_table_in_use(), path_);
  EXPECT_EQ(pick(Collective::AllReduce, 8, one_host(2)), "shm_cma");
  EXPECT_EQ(pick(Collective::AllReduce, 8, one_host(3)), "shm_rs_ag");  // the 4-rank line
  EXPECT_EQ(pick(Collective::AllReduce, 1 << 20, one_host(4)), "shm_cma");
  EXPECT_EQ(pick(Collective::AllReduce, 1 << 20, one_host(16)), "shm_cma");  // the largest serves more
  EXPECT_EQ(pick(Collective::Broadcast, 8, one_host(2)), "shm_flat");  // not measured: built in
  {
    GroupTraits two_hosts = one_host(4);
    two_hosts.hosts = 2;
    two_hosts.max_ranks_per_host = 2;
    two_hosts.shm = false;
    EXPECT_EQ(pick(Collective::AllReduce, 1 << 20, two_hosts).rfind("shm_", 0), std::string::npos);
  }
  set_algorithm_override("all_reduce=shm_flat");  // SPMD_ALGO still wins
  EXPECT_EQ(pick(Collective::AllReduce, 8, one_host(2)), "shm_flat");
}

TEST_F(TunedTableTest, AnotherMachinesTableIsIgnored) {
  write_text("machine cpus=4096 model=a machine not this one\n2 all_reduce shm_cma\n");
  set_algorithm_override("");
  EXPECT_EQ(tuned_table_in_use(), "");
  EXPECT_EQ(pick(Collective::AllReduce, 8, one_host(2)), "shm_flat");
}

TEST(SpmdTuneWinners, RangesSplitAtTheGeometricMean) {
  spmd_tune::Timings t;
  t.sizes = {64, 256, 1024, 4096, 16384};
  t.algorithms = {"shm_flat", "shm_cma"};
  t.median = {{1, 2}, {1, 2}, {3, 2}, {4, 2}, {9, 2}};
  std::vector<size_t> w = spmd_tune::winners(t);
  EXPECT_EQ(w, (std::vector<size_t>{0, 0, 1, 1, 1}));
  EXPECT_EQ(spmd_tune::ranges(t, w), "shm_flat:0-512,shm_cma:512-");
  t.median = {{1, 2}, {1, 2}, {1, 2}, {1, 2}, {1, 2}};
  EXPECT_EQ(spmd_tune::ranges(t, spmd_tune::winners(t)), "shm_flat");
}

TEST(SpmdTuneWinners, TheBuiltInChoiceKeepsItsSizeUnlessClearlyBeaten) {
  spmd_tune::Timings t;
  t.sizes = {1024, 4096};
  t.algorithms = {"a", "b"};
  t.median = {{1.04, 1.0}, {1.2, 1.0}};
  const std::vector<size_t> built_in = {0, 0};  // the built-in table chooses a at both
  EXPECT_EQ(spmd_tune::winners(t, built_in), (std::vector<size_t>{0, 1}));  // 4 % kept, 20 % not
  EXPECT_EQ(spmd_tune::winners(t, {2, 2}), (std::vector<size_t>{1, 1}));    // it chooses neither
  // b's median is 20 % better at 4 KiB, but it won only 2 of 4 rounds: a slow spell on a's
  // rounds, not a faster algorithm.
  t.rounds = {{{1.04, 1.04, 1.04, 1.04}, {1, 1, 1, 1}}, {{1.0, 1.0, 1.2, 1.2}, {1.1, 1.1, 1.0, 1.0}}};
  EXPECT_EQ(spmd_tune::winners(t, built_in), (std::vector<size_t>{0, 0}));
  t.rounds[1] = {{1.2, 1.2, 1.2, 1.0}, {1.0, 1.0, 1.0, 1.1}};  // 3 of 4: b takes it
  EXPECT_EQ(spmd_tune::winners(t, built_in), (std::vector<size_t>{0, 1}));
  t.median[0][0] = std::numeric_limits<double>::infinity();  // a cannot run there
  EXPECT_EQ(spmd_tune::winners(t, built_in), (std::vector<size_t>{1, 1}));
}

TEST(SpmdTuneWinners, OneNoisySizeDoesNotSplitARange) {
  spmd_tune::Timings t;
  t.sizes = {1024, 4096, 16384};
  t.algorithms = {"a", "b"};
  t.median = {{1, 2}, {1.03, 1.0}, {1, 2}};  // b wins the middle by 3 %: a keeps it
  EXPECT_EQ(spmd_tune::winners(t), (std::vector<size_t>{0, 0, 0}));
  t.median[1] = {1.5, 1.0};  // by a third: b takes it
  std::vector<size_t> w = spmd_tune::winners(t);
  EXPECT_EQ(w, (std::vector<size_t>{0, 1, 0}));
  EXPECT_EQ(spmd_tune::ranges(t, w), "a:0-2K,b:2K-8K,a:8K-");
  EXPECT_EQ(spmd_tune::size_text(3 << 20), "3M");
  EXPECT_EQ(spmd_tune::size_text(1000), "1000");
}

}  // namespace
}  // namespace spmd::algo
